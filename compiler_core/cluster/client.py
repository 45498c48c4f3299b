"""The web side of the broker: environments, runs (queued fairly, fairness.py), their streams,
per-client leases (leases.py), handles and the shared store.

Every method raises `BrokerDown` (never a redis exception) when Redis cannot be reached, so the
web layer answers 503 and carries on; the client reconnects by itself once Redis is back.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import uuid

from ..errors import ErrorKind
from ..fairness import QueueRefused
from ..supervisor.job import empty_result
from ..limits import limit
from . import fairness, leases, protocol, store
from .reaper import reap


class BrokerDown(RuntimeError):
    """Redis cannot take a command now (down, restarting, loading its data, or full)."""


class StoreFull(BrokerDown):
    """The shared results store refused a result: its bound is taken by results in use."""


class Broker:
    def __init__(self, url: str) -> None:
        self.shown = protocol.redact(url)  # never the password
        self.conn = protocol.connect(url)

    @contextlib.contextmanager
    def _reachable(self):
        try:
            yield
        except protocol.broker_errors() as exc:
            why = ("is full (its maxmemory); try again later" if protocol.is_full(exc) else
                   f"cannot be reached ({type(exc).__name__})")
            raise BrokerDown(f"the job broker (Redis at {self.shown}) {why}") from None

    def ping(self) -> bool:
        try:
            return bool(self.conn.ping())
        except protocol.broker_errors():
            return False

    def shared_token(self) -> str:
        """The access token all web servers of this broker share (made by the first one)."""
        with self._reachable():
            self.conn.set("torchbolt:token", secrets.token_urlsafe(24), nx=True)
            return self.conn.get("torchbolt:token").decode()

    # -- environments: what the live slots advertise
    def environments(self) -> list[dict]:
        """`[{id, torch, triton, device, device_name, workers}]`, most workers first."""
        with self._reachable():
            keys = list(self.conn.scan_iter(match=protocol.slot_key("*"), count=500))
            beats = [json.loads(v) for v in (self.conn.mget(keys) if keys else []) if v]
        found: dict[str, dict] = {}
        for beat in beats:
            env = found.setdefault(beat["env_id"], {"id": beat["env_id"],
                                                     **protocol.environment_identity(beat),
                                                     "workers": 0})
            env["workers"] += 1
        return sorted(found.values(), key=lambda e: (-e["workers"], e["id"]))

    # -- runs
    def active_run(self, key: str) -> str | None:
        """The run queued or running for `key` on any web server (not one being cancelled)."""
        with self._reachable():
            run_id = self.conn.get(protocol.active_key(key))
            if run_id is None:
                return None
            run_id = run_id.decode()
            live = self.conn.exists(protocol.run_key(run_id)) and not self.conn.exists(
                protocol.cancel_key(run_id))
            return run_id if live else None

    def start_run(self, key: str, source: str, options: dict, env_id: str, client: str,
                  max_queued: int) -> tuple[str, int]:
        """Queue a new run of `key` for `client` on `env_id`'s fair queue, and send runs on
        to RQ if slots are free. Returns (run id, its queue position: 1 = next);
        `QueueRefused` when the queue's admission refuses it."""
        run_id = uuid.uuid4().hex
        with self._reachable():
            self.conn.xadd(protocol.run_key(run_id), protocol.entry("queued", {
                "key": key, "source": source, "options": options, "env_id": env_id}))
            self.conn.expire(protocol.run_key(run_id), protocol.RUN_TTL_S)
            try:
                ahead = fairness.push(self.conn, env_id, run_id, client, max_queued)
            except QueueRefused:
                self.conn.delete(protocol.run_key(run_id))
                raise
            ahead += self._in_rq(env_id)
            self.conn.set(protocol.active_key(key), run_id, ex=protocol.RUN_TTL_S)
            fairness.dispatch(self.conn, env_id)
        return run_id, ahead + 1

    def _in_rq(self, env_id: str) -> int:
        """Runs already handed to RQ that no slot has taken yet (they go first)."""
        from rq import Queue
        return Queue(protocol.queue_name(env_id), connection=self.conn).count

    def dispatch(self, env_id: str) -> None:
        """Send waiting runs of `env_id` on to RQ while its slots are free."""
        with self._reachable():
            fairness.dispatch(self.conn, env_id)

    def run_origin(self, run_id: str) -> dict | None:
        """What a run was queued with: {key, source, options, env_id}."""
        with self._reachable():
            return protocol.run_origin(self.conn, run_id)

    def read(self, cursors: dict[str, str], block_ms: int) -> list[tuple]:
        """New entries of these runs' streams after each cursor (entry id; "0" for all):
        `[(run_id, entry_id, kind, data)]`, waiting up to `block_ms` for one."""
        streams = {protocol.run_key(run_id): cursor for run_id, cursor in cursors.items()}
        with self._reachable():
            answer = self.conn.xread(streams, block=block_ms, count=500) or []
        return [(stream.decode().rsplit(":", 1)[1], entry_id.decode(), *protocol.read_entry(f))
                for stream, entries in answer for entry_id, f in entries]

    def lost_runs(self, run_ids) -> list[str]:
        """Runs whose stream is gone (a Redis restarted without persistence)."""
        with self._reachable():
            return [r for r in run_ids if not self.conn.exists(protocol.run_key(r))]

    def cancel(self, run_id: str, env_id: str, key: str) -> None:
        """Cancel a run: its slot stops it, or, still waiting for one, it ends here."""
        with self._reachable():
            self.conn.set(protocol.cancel_key(run_id), 1, ex=protocol.RUN_TTL_S)
            if fairness.remove(self.conn, env_id, run_id):
                error = ErrorKind.CANCELLED.error("cancelled before it started")
                protocol.end_run(self.conn, run_id, key, empty_result(error))

    def reap(self, env_ids) -> int:
        with self._reachable():
            return reap(self.conn, env_ids)

    # -- per-client limits of all web servers together (leases.py)
    def acquire_lease(self, client: str, lease_id: str, limit: int) -> bool:
        with self._reachable():
            return leases.acquire(self.conn, client, lease_id, limit)

    def renew_leases(self, held: list[tuple[str, str]]) -> None:
        with self._reachable():
            leases.renew(self.conn, held)

    def release_leases(self, ended: list[tuple[str, str]]) -> None:
        with self._reachable():
            leases.release(self.conn, ended)

    # -- handles, so that any web server answers for any job id
    def save_handle(self, handle_id: str, meta: dict) -> None:
        with self._reachable():
            self.conn.set(protocol.handle_key(handle_id), json.dumps(meta),
                          ex=protocol.HANDLE_TTL_S)
            store.touch(self.conn, meta["key"])  # the handle reads its stored result

    def load_handle(self, handle_id: str) -> dict | None:
        with self._reachable():
            meta = self.conn.get(protocol.handle_key(handle_id))
        return json.loads(meta) if meta else None

    # -- the shared store (as app/store.py's SQLite rows: zlib-compressed JSON results),
    # bounded (store.py)
    def save_result(self, key: str, source: str, options: dict, blob: bytes) -> None:
        """Store a row; `StoreFull` when the results in use leave it no room."""
        with self._reachable():
            saved = store.save(self.conn, key, source, options, blob)
        if not saved:
            raise StoreFull(
                f"the result was not stored: the fleet's shared store is at its bound "
                f"({limit('fleet_store_bytes') / 2**20:g} MiB, the fleet_store_bytes limit) "
                "with results used within the last hour")

    def load_result(self, key: str) -> tuple[str, dict, bytes] | None:
        """(source, options, compressed result) or None."""
        with self._reachable():
            return store.load(self.conn, key)


