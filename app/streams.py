"""Caps on open event streams, so they can never take every server thread.

waitress serves requests from a fixed pool of threads and each open SSE stream holds one for as
long as it is open. A client may hold `per_client` streams and all clients together `total`
(the server's threads less a reserve), so ordinary requests always find a free thread. Over a
cap the stream is refused at once with a 429; the page then polls the job instead. (An idle
connection holds no thread; `app/serving.py` lets waitress keep many of them.)
"""

from __future__ import annotations

import threading
from collections import Counter

from .errors import ApiError


class StreamSlot:
    def __init__(self, limiter: "StreamLimiter", client: str):
        self._limiter, self._client, self._held = limiter, client, True

    def release(self) -> None:
        with self._limiter.lock:
            if self._held:
                self._held = False
                self._limiter.open[self._client] -= 1
                if not self._limiter.open[self._client]:
                    del self._limiter.open[self._client]


class StreamLimiter:
    def __init__(self, per_client: int, total: int):
        self.per_client, self.total = per_client, max(0, total)
        self.open: Counter = Counter()
        self.lock = threading.Lock()

    def acquire(self, client: str) -> StreamSlot:
        """A slot for one stream, or a 429 ApiError; release the slot when the stream ends."""
        with self.lock:
            if self.open[client] >= self.per_client:
                refuse(f"this client already has {self.per_client} open event streams "
                       "(the limit per client); poll GET /api/jobs/ID instead")
            if sum(self.open.values()) >= self.total:
                refuse(f"the server has {self.total} open event streams, its limit; "
                       "poll GET /api/jobs/ID instead")
            self.open[client] += 1
            return StreamSlot(self, client)

    def count(self, client: str | None = None) -> int:
        with self.lock:
            return sum(self.open.values()) if client is None else self.open[client]


def refuse(message: str) -> None:
    raise ApiError(429, message, headers={"Retry-After": "5"})
