"""Caps on requests that hold a server thread for long: event streams and expensive answers.

waitress serves requests from a fixed pool of threads. Each open SSE stream holds one for as
long as it is open; a graph layout or a report build holds one for up to the `layout_seconds`
limit. A client may hold `per_client` of each kind and all clients together `total`, so ordinary
requests always find a free thread. Over a cap the request is refused at once with a 429 and a
Retry-After; the page then polls the job instead of streaming. (An idle connection holds no
thread; `app/serving.py` lets waitress keep many of them.)
"""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter

from .errors import ApiError

HEARTBEAT_S = 15
log = logging.getLogger(__name__)  # a child of the Flask app's logger ("app")


class Permit:
    """Leave to hold one place under a `Limiter`; released once, however often `release` is
    called."""

    def __init__(self, limiter: "Limiter", client: str):
        self._limiter, self._client, self._held = limiter, client, True

    def release(self) -> None:
        with self._limiter.lock:
            if self._held:
                self._held = False
                self._limiter.open[self._client] -= 1
                if not self._limiter.open[self._client]:
                    del self._limiter.open[self._client]

    def __enter__(self) -> "Permit":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class Limiter:
    def __init__(self, per_client: int, total: int, what: str = "open event streams",
                 instead: str = "poll GET /api/jobs/ID instead"):
        self.per_client, self.total = per_client, max(0, total)
        self.what, self.instead = what, instead
        self.open: Counter = Counter()
        self.lock = threading.Lock()

    def acquire(self, client: str) -> Permit:
        """A permit, or a 429 ApiError; release the permit when the work ends."""
        with self.lock:
            if self.open[client] >= self.per_client:
                refuse(f"this client already has {self.per_client} {self.what} (the limit per "
                       f"client); {self.instead}")
            if sum(self.open.values()) >= self.total:
                refuse(f"the server has {self.total} {self.what}, its limit; {self.instead}")
            self.open[client] += 1
            return Permit(self, client)

    def count(self, client: str | None = None) -> int:
        with self.lock:
            return sum(self.open.values()) if client is None else self.open[client]


def refuse(message: str) -> None:
    raise ApiError(429, message, headers={"Retry-After": "5"})


def event_stream(handle, start: int, permit: Permit):
    """The handle's events numbered after `start` as SSE, a keep-alive comment while none comes,
    until `done`. Releases the permit when it ends; an unexpected error ends the stream (its
    headers are sent: it can no longer become an error response) and is logged."""
    index = start
    try:
        yield "retry: 1000\n\n"
        while True:
            batch = handle.events_after(index, HEARTBEAT_S)
            if not batch:
                if handle.is_finished:
                    return
                yield ": keep-alive\n\n"
            for event in batch:
                index += 1
                yield f"id: {index}\nevent: {event['type']}\ndata: {json.dumps(event)}\n\n"
                if event["type"] == "done":
                    return
    except Exception:  # the safety net of a response whose headers are sent
        log.exception("the event stream of handle %s failed", handle.id)
    finally:
        permit.release()
