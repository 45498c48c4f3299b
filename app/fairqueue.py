"""A queue served round-robin across clients: FIFO within a client, clients taken in turn.

So one client who queues many runs delays everyone else by at most one run each round, instead
of by its whole backlog. `get` blocks until something is queued; `remove` takes a run out before
it starts (a cancel).
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque


class FairQueue:
    def __init__(self) -> None:
        self._queues: "OrderedDict[str, deque]" = OrderedDict()  # in serving order
        self._ready = threading.Condition()

    def put(self, client: str, item) -> None:
        with self._ready:
            self._queues.setdefault(client, deque()).append(item)
            self._ready.notify()

    def get(self):
        """The next item: the first of the client whose turn it is; that client goes last."""
        with self._ready:
            while not self._queues:
                self._ready.wait()
            client, items = next(iter(self._queues.items()))
            item = items.popleft()
            del self._queues[client]
            if items:
                self._queues[client] = items  # back of the line
            return item

    def remove(self, item) -> bool:
        """Take `item` out if it is still queued; False when a runner already took it."""
        with self._ready:
            for client, items in self._queues.items():
                if item in items:
                    items.remove(item)
                    if not items:
                        del self._queues[client]
                    return True
            return False

    def qsize(self) -> int:
        with self._ready:
            return sum(len(items) for items in self._queues.values())

    def position_for(self, client: str) -> int:
        """The estimated position (1 = next) of an item `client` would queue now: each client
        ahead of it in the rotation serves as many items as it will have, those behind one
        fewer (a new client joins the rotation last)."""
        with self._ready:
            mine = len(self._queues.get(client, ())) + 1
            ahead, position = True, 0
            for other, items in self._queues.items():
                if other == client:
                    ahead = False
                    continue
                position += min(len(items), mine if ahead else mine - 1)
            return position + mine
