"""Per-client budgets: token buckets, as the rate limits of public APIs are.

`Budget` gives each client (its peer address, as for every per-client limit) `capacity` at once,
refilled at `per_second`; a request that needs more than is left is a 429 that says when to try
again. Three spend one: submits (`SubmitBudget`: every submit costs one token, an answer from the
store too: it is at once, but it is a handle kept for an hour, manager.KEEP_HANDLES_S, so a resubmit
loop must not be free), graph layouts (seconds of layout, app/graphview.py) and uploads (bytes
added to the share store, app/reports.py).
"""

from __future__ import annotations

import math
import threading
import time
from contextlib import contextmanager
from typing import Callable

from .errors import ApiError

MAX_CLIENTS = 10_000  # buckets kept; full ones (idle clients) are dropped first


class Budget:
    def __init__(self, settings: Callable[[], tuple[float, float]],
                 refusal: Callable[[int], str], clock=time.monotonic):
        """`settings()`: (capacity, per_second), read at each use (limits may be raised);
        `refusal(wait_s)`: the message of a 429, naming the rule."""
        self.settings, self.refusal, self.clock = settings, refusal, clock
        self._buckets: dict[str, tuple[float, float]] = {}  # client -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, client: str, cost: float = 1) -> None:
        """Spend `cost` of `client`'s tokens, or a 429 ApiError with Retry-After."""
        with self._lock:
            capacity, rate = self.settings()
            now, tokens = self.clock(), self._tokens(client, capacity, rate)
            if tokens < cost:
                wait = math.ceil((cost - tokens) / rate)
                raise ApiError(429, self.refusal(wait), headers={"Retry-After": str(wait)})
            self._buckets[client] = (tokens - cost, now)
            if len(self._buckets) > MAX_CLIENTS:
                self._forget_idle(now, capacity, rate)

    def charge(self, client: str, amount: float) -> None:
        """Spend `amount` more (a negative one gives back), past zero if need be."""
        with self._lock:
            capacity, rate = self.settings()
            tokens = self._tokens(client, capacity, rate)
            self._buckets[client] = (min(capacity, tokens - amount), self.clock())

    @contextmanager
    def spending_seconds(self, client: str):
        """Work that starts while the client has any of its seconds left and is charged the
        seconds it took (a client overspends by at most the work it has running)."""
        self.take(client, 0)
        started = self.clock()
        try:
            yield
        finally:
            self.charge(client, self.clock() - started)

    def _tokens(self, client: str, capacity: float, rate: float) -> float:
        tokens, at = self._buckets.get(client, (capacity, self.clock()))
        return min(capacity, tokens + (self.clock() - at) * rate)

    def _forget_idle(self, now: float, capacity: float, rate: float) -> None:
        for client, (tokens, at) in list(self._buckets.items()):
            if tokens + (now - at) * rate >= capacity:
                del self._buckets[client]


class SubmitBudget(Budget):
    """A client may send `burst` submits at once, then `per_minute` a minute."""

    def __init__(self, per_minute: float, burst: int, clock=time.monotonic):
        super().__init__(lambda: (burst, per_minute / 60.0), lambda wait: (
            f"this client sent too many submits (the limit per client is {burst} at once, then "
            f"{per_minute:g} a minute); try again in {wait} s"), clock)
