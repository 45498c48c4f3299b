"""A queue served round-robin across clients: FIFO within a client, clients taken in turn.

The next item is the oldest one of the client served least recently (never served: first), so a
client that just had a run goes behind everyone else who is waiting, even when it queues its
next run before they queue theirs. One client's backlog thus delays every other client by at
most one run per turn. `get` blocks until something is queued; `remove` takes an item out
before it starts (a cancel).
"""

from __future__ import annotations

import itertools
import threading
from collections import deque


class FairQueue:
    def __init__(self) -> None:
        self._queues: dict[str, deque] = {}  # client -> deque of (sequence number, item)
        self._served: dict[str, int] = {}  # client -> the turn it was last served in
        self._turns = itertools.count(1)
        self._numbers = itertools.count()
        self._ready = threading.Condition()

    def put(self, client: str, item) -> None:
        with self._ready:
            self._queues.setdefault(client, deque()).append((next(self._numbers), item))
            self._ready.notify()

    def get(self):
        """The next item (blocks until there is one)."""
        with self._ready:
            while not self._queues:
                self._ready.wait()
            client = min(self._queues, key=self._turn_key)
            _, item = self._queues[client].popleft()
            if not self._queues[client]:
                del self._queues[client]
            self._served[client] = next(self._turns)
            return item

    def remove(self, item) -> bool:
        """Take `item` out if it is still queued; False when a runner already took it."""
        with self._ready:
            for client, entries in self._queues.items():
                for entry in entries:
                    if entry[1] is item:
                        entries.remove(entry)
                        if not entries:
                            del self._queues[client]
                        return True
            return False

    def qsize(self) -> int:
        with self._ready:
            return sum(len(entries) for entries in self._queues.values())

    def position_for(self, client: str) -> int:
        """The estimated position (1 = next) of an item `client` would queue now: it waits for
        the `n` items `client` has queued and for n (or n + 1, if their turn comes first) items
        of each other client."""
        with self._ready:
            mine = len(self._queues.get(client, ()))
            key = self._turn_key(client) if mine else (self._served.get(client, -1), float("inf"))
            return mine + 1 + sum(min(len(entries), mine + (self._turn_key(other) < key))
                                  for other, entries in self._queues.items() if other != client)

    def _turn_key(self, client: str) -> tuple:
        return self._served.get(client, -1), self._queues[client][0][0]
