"""The one fairness rule between clients, and the in-memory queue that follows it.

The rule: each client's runs take one round each. A new run gets the current round (the round
of the run taken last), or the round after its client's latest run when that is later. The
lowest round goes first and, within a round, the run queued first. So while A's burst waits,
B's and C's single runs go before A's second: a client's backlog delays each other client by at
most one run per round, and a client whose run was just taken queues behind everyone waiting.

It is stated here once, as `round_for` and `order_key`, and both queues use it: `FairQueue`
(one web server's runner threads, in memory) and cluster/fairness.py (per environment, in
Redis, shared by every web server and slot). Pure Python: no Redis, no Flask, no torch.

Admission (`admission_refusal`) is the same for every queue: a client with nothing queued may
take any free place; a client with a run queued already may queue another only while its
network (`network_of`: its /24, or /64 for IPv6) has fewer than `queued_per_network` runs queued
and the queue keeps its last `queue_kept_for_new` places free. So one host with many addresses
(33 loopback addresses x 2 jobs) cannot fill the queue against a client it has never seen, and a
room on one LAN still queues everyone's first job.

The in-memory queue used to serve "the oldest item of the client served least recently". That
gives the same order for bursts against single runs; it differs only inside one round, where
it put a client never served before a client served long ago even if that one queued first.
The rounds rule keeps queued order there, as Redis always did, so both paths now agree.
"""

from __future__ import annotations

import bisect
import ipaddress
import itertools
import threading

from .limits import limit


def round_for(current: int, latest: int | None) -> int:
    """The round of a client's new run, from the round of the run taken last (`current`) and
    that of the client's latest run (`latest`, None if it has none)."""
    return current if latest is None else max(current, latest + 1)


def order_key(round_: int, seq: int) -> tuple[int, int]:
    """Where a waiting run stands (the lowest goes next): its round, then its place in the
    order runs were queued (`seq`, counting up)."""
    return round_, seq


def network_of(client: str) -> str:
    """The network a client counts in for admission: its /24 (IPv4, IPv4-mapped IPv6 too) or
    its /64 (IPv6); a client that is not an address is a network of its own."""
    try:
        address = ipaddress.ip_address(client)
    except ValueError:
        return client
    if address.version == 6 and address.ipv4_mapped:
        address = address.ipv4_mapped
    prefix = 24 if address.version == 4 else 64
    return str(ipaddress.ip_network(f"{address}/{prefix}", strict=False))


class QueueRefused(Exception):
    """A run the queue did not take (`admission_refusal`'s answer): `status` (HTTP) and
    `message`, which names the rule."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def admission_refusal(client_queued: int, network_queued: int, network: str, queued: int,
                      max_queued: int) -> tuple[int, str] | None:
    """(HTTP status, message) refusing a client's new run, or None to queue it; from the runs
    already queued: the client's, its network's and all of them (the rule in the docstring)."""
    if queued >= max_queued:
        return 503, f"the compile queue is full ({max_queued} jobs); try again in a minute"
    if client_queued == 0:
        return None
    per_network, kept = limit("queued_per_network"), limit("queue_kept_for_new")
    if network_queued >= per_network:
        return 429, (f"your network ({network}) already has {network_queued} jobs queued (the "
                     f"queued_per_network limit): wait until your queued job starts")
    if queued >= max_queued - kept:
        return 429, (f"the compile queue has {queued} of {max_queued} jobs; its last {kept} "
                     "places are kept for clients with nothing queued (the queue_kept_for_new "
                     "limit): wait until your queued job starts")
    return None


def refusal_among(queued_by: list[str], client: str, max_queued: int) -> tuple[int, str] | None:
    """`admission_refusal` for `client`'s new run, from the clients of the runs queued now
    (one entry per run)."""
    network = network_of(client)
    in_network = sum(network_of(other) == network for other in queued_by)
    return admission_refusal(queued_by.count(client), in_network, network, len(queued_by),
                             max_queued)


class FairQueue:
    """Runs waiting for one web server's runner threads, taken by the rule above. `get` blocks
    until something is queued; `remove` takes an item out before it starts (a cancel)."""

    def __init__(self) -> None:
        self._waiting: list[tuple[tuple[int, int], object, str]] = []  # (order_key, item,
        # client), sorted
        self._latest: dict[str, int] = {}  # client -> the round of its latest run
        self._round = 0  # the round of the item taken last
        self._numbers = itertools.count()
        self._ready = threading.Condition()

    def put(self, client: str, item) -> None:
        with self._ready:
            round_ = self._next_round(client)
            self._latest[client] = round_
            entry = (order_key(round_, next(self._numbers)), item, client)
            bisect.insort(self._waiting, entry, key=lambda waiting: waiting[0])
            self._ready.notify()

    def get(self):
        """The next item (blocks until there is one)."""
        with self._ready:
            while not self._waiting:
                self._ready.wait()
            (self._round, _), item, _ = self._waiting.pop(0)
            self._forget_past_clients()
            return item

    def remove(self, item) -> bool:
        """Take `item` out if it is still queued; False when a runner already took it."""
        with self._ready:
            for index, (_, queued, _) in enumerate(self._waiting):
                if queued is item:
                    del self._waiting[index]
                    return True
            return False

    def qsize(self) -> int:
        with self._ready:
            return len(self._waiting)

    def position_for(self, client: str) -> int:
        """The position (1 = next) of an item `client` would queue now: behind every waiting
        item of its round or an earlier one. A later item of another client may still go
        ahead of it (one in an earlier round), so it is an estimate."""
        with self._ready:
            round_ = self._next_round(client)
            return 1 + sum(key[0] <= round_ for key, _, _ in self._waiting)

    def refusal(self, client: str, max_queued: int) -> tuple[int, str] | None:
        """Why `client` may not queue a run now (`admission_refusal`), or None."""
        with self._ready:
            return refusal_among([queued_by for _, _, queued_by in self._waiting], client,
                                 max_queued)

    def _next_round(self, client: str) -> int:
        return round_for(self._round, self._latest.get(client))

    def _forget_past_clients(self) -> None:
        """Drop clients whose latest round is before the current one: `round_for` gives them
        the current round just as for a client never seen, so the map stays as small as the
        clients waiting (or just taken) instead of growing with every client ever served."""
        self._latest = {client: round_ for client, round_ in self._latest.items()
                        if round_ >= self._round}
