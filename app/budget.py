"""A per-client budget of submits: a token bucket, as the rate limits of public APIs are.

Every submit costs its client one token, an answer from the store too: it is at once, but it is
a handle kept for an hour (manager.KEEP_JOBS_S), so a resubmit loop must not be free. A client
(its peer address, as for every per-client limit) may send `burst` submits at once, then
`per_minute` a minute; over that a 429 says when to try again.
"""

from __future__ import annotations

import math
import threading
import time

from .errors import ApiError

MAX_CLIENTS = 10_000  # buckets kept; full ones (idle clients) are dropped first


class SubmitBudget:
    def __init__(self, per_minute: float, burst: int, clock=time.monotonic):
        self.rate, self.burst, self.clock = per_minute / 60.0, burst, clock
        self._buckets: dict[str, tuple[float, float]] = {}  # client -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, client: str) -> None:
        """Spend one of `client`'s tokens, or a 429 ApiError with Retry-After."""
        with self._lock:
            now = self.clock()
            tokens, at = self._buckets.get(client, (self.burst, now))
            tokens = min(self.burst, tokens + (now - at) * self.rate)
            if tokens < 1:
                wait = math.ceil((1 - tokens) / self.rate)
                raise ApiError(429, f"this client sent too many submits (the limit per client is "
                                    f"{self.burst} at once, then {self.rate * 60:g} a minute); "
                                    f"try again in {wait} s", headers={"Retry-After": str(wait)})
            self._buckets[client] = (tokens - 1, now)
            if len(self._buckets) > MAX_CLIENTS:
                self._forget_idle(now)

    def _forget_idle(self, now: float) -> None:
        for client, (tokens, at) in list(self._buckets.items()):
            if tokens + (now - at) * self.rate >= self.burst:
                del self._buckets[client]
