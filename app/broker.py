"""The run manager with a Redis broker (`python -m app --broker redis://HOST:PORT/DB`).

The same handles, runs, per-client limit and cancel rules as `manager.RunManager`; what differs:

- runs are queued on the chosen environment's RQ queue and run on worker hosts
  (`python -m compiler_core worker`); identical submits on any web server share one run;
- one follower thread reads the streams of the runs this server follows (XREAD) and feeds each
  into its run's engine `Job` (the steps its slot's `Job` published), so events, SSE and
  partial results are as with a local worker; its `result` ends the run through `finish`,
  which stores it on a thread of its own (the follower reads on for every other run);
- handles are saved in Redis, so any web server answers for any handle (no sticky sessions);
- results go to the shared store in Redis; each server keeps the latest ones it saw in memory,
  and serves them from there while Redis is down; anything else then is a 503.

Fair to every client across the fleet (clients told apart by peer address, as before): a
client's `per_client` live submits are leases in Redis, shared by all web servers
(compiler_core/cluster/leases.py: this server renews the leases of the submits it serves and
releases them when they end or are cancelled), and runs wait in a round-robin queue per
environment that feeds RQ one run per free slot (compiler_core/cluster/fairness.py), admitted
by the embedded queue's rule (at most `max_queued` per environment, per /24 or /64 network).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
import uuid
from collections import OrderedDict

from compiler_core import (Broker, BrokerDown, Options, QueueRefused, StoreFull,
                           compress_result, environment_identity)

from .errors import ApiError
from .manager import RESULT_CACHE_BYTES, RunManager, limit_reached
from .runs import Handle, Run

CACHED_RESULTS = 256  # compressed results kept in memory per server (~10x smaller than JSON)
READ_BLOCK_MS = 500
CHECK_EVERY_S = 3.0  # reap dead slots' jobs, notice lost runs
READY_TIMEOUT_S = 300
log = logging.getLogger("torchbolt.broker")


class RedisStore:
    """The shared store, with the latest results this server saw kept for when Redis is down."""

    def __init__(self, broker: Broker, keep: int = CACHED_RESULTS) -> None:
        self.broker, self.keep = broker, keep
        self._seen: OrderedDict[str, tuple] = OrderedDict()
        self._lock = threading.Lock()

    def _remember(self, key: str, row: tuple) -> None:
        with self._lock:
            self._seen[key] = row
            self._seen.move_to_end(key)
            while len(self._seen) > self.keep:
                self._seen.popitem(last=False)

    def put(self, key: str, source: str, options: dict, result: dict) -> None:
        row = (source, options, compress_result(result))
        self._remember(key, row)
        self.broker.save_result(key, *row)

    def row(self, key: str) -> tuple | None:
        """(source, options, compressed result JSON) or None, as `store.Store.row`."""
        try:
            row = self.broker.load_result(key)
        except BrokerDown:
            row = self._seen.get(key)
            if row is None:
                raise
        if row is not None:
            self._remember(key, row)
        return row


class FollowedRun(Run):
    """A run on a worker host: `remote` is its run id in the broker, `cursor` the last entry
    of its stream this server applied, `env_id` the environment it runs in."""

    def __init__(self, remote: str, key: str, source: str, options: Options,
                 env_id: str | None = None) -> None:
        super().__init__(key, source, options)
        self.remote, self.cursor, self.env_id = remote, "0", env_id


class BrokerManager(RunManager):
    def __init__(self, broker: Broker, per_client: int, local_slots: int = 0,
                 cache_bytes: int = RESULT_CACHE_BYTES) -> None:
        super().__init__(RedisStore(broker), [], per_client, cache_bytes=cache_bytes)
        self.broker, self.local_slots = broker, local_slots
        self._following: dict[str, FollowedRun] = {}  # run id -> the run this server follows
        self._closed = threading.Event()

    def start(self) -> "BrokerManager":
        threading.Thread(target=self._follow, daemon=True, name="torchbolt-follower").start()
        return self

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> None:
        """With worker slots started beside this server, wait until one advertises itself."""
        deadline = time.monotonic() + timeout
        while self.local_slots and time.monotonic() < deadline:
            with contextlib.suppress(BrokerDown):
                if self.broker.environments():
                    return
            time.sleep(0.5)

    def close(self) -> None:
        self._closed.set()

    # -- requests (RunManager's rules; these steps put runs on the broker)
    def choose_environment(self, requested: str | None) -> tuple[str, str]:
        environments = self.environments()
        if not environments:
            raise ApiError(503, "no compile workers are connected to the broker; start one "
                                "with `python -m compiler_core worker --broker URL`")
        chosen = next((e for e in environments if e["id"] == requested), None) \
            if requested else environments[0]
        if chosen is None:
            raise ApiError(400, f"unknown environment {requested!r}; GET /api/status lists "
                                f"the connected ones: {', '.join(e['id'] for e in environments)}")
        engine = {**environment_identity(chosen), "result": json.loads(self.engine)["result"]}
        return chosen["id"], json.dumps(engine, sort_keys=True)

    def joinable(self, key: str) -> Run | None:
        """This server's run of `key`, else the one another server queued (followed here)."""
        run = super().joinable(key)
        if run is not None:
            return run
        run_id = self.broker.active_run(key)
        return self._adopt(run_id) if run_id else None

    def admit(self, client: str) -> str:
        """The per-client limit of all web servers together: a lease in Redis (one script
        counts and adds), whose id the submit's handle takes as its job id (a submit that fails
        after this, Redis being down, leaves a lease no one renews: it runs out)."""
        lease_id = uuid.uuid4().hex
        if not self.broker.acquire_lease(client, lease_id, self.per_client):
            raise limit_reached(self.per_client)
        return lease_id

    def enqueue(self, key, source, options, client, env_id, handle_id) -> Run:
        try:
            run_id, position = self.broker.start_run(key, source, options.to_dict(), env_id,
                                                     client, self.max_queued)
        except QueueRefused as refused:  # compiler_core/fairness.py's admission, in Redis
            self.broker.release_leases([(client, handle_id)])  # the lease `admit` took
            raise ApiError(refused.status, refused.message, headers={"Retry-After": "30"}) \
                from None
        run = self._watch(run_id, key, source, options, env_id)
        run.emit({"type": "status", "status": "queued", "position": position})
        return run

    def add(self, handle: Handle) -> Handle:
        """Saved in Redis too, so that any web server answers for its job id."""
        run = handle.run
        remote = run.remote if isinstance(run, FollowedRun) else None  # else a stored answer
        self.broker.save_handle(handle.id, {"run": remote, "key": handle.key,
                                            "client": handle.client})
        return super().add(handle)

    def lookup(self, handle_id: str) -> Handle | None:
        """A handle another server made (adopted: its run followed here)."""
        meta = self.broker.load_handle(handle_id)
        if meta is None:
            return None
        with self.lock:
            run = self._adopt(meta["run"]) if meta["run"] else self._stored_run(meta["key"])
            return run and Handle(run, meta["client"], handle_id)

    def cancel(self, handle: Handle) -> None:
        super().cancel(handle)
        if handle.detached:
            self.broker.release_leases([(handle.client, handle.id)])
        run = handle.run
        if isinstance(run, FollowedRun) and run.job.cancelled:
            self.broker.cancel(run.remote, run.env_id, run.key)

    def environments(self) -> list[dict]:
        environments = self.broker.environments()
        if environments:
            self.environment = {k: v for k, v in environments[0].items()
                                if k not in ("id", "workers")}
        return environments

    def status(self) -> dict:
        try:
            environments, up = self.environments(), True
        except BrokerDown:
            environments, up = [], False
        return {"environment": self.environment, "environments": environments,
                "broker": {"url": self.broker.shown, "reachable": up}}

    # -- runs followed through their streams
    def _stored_run(self, key: str) -> Run | None:
        stored = self.store.get(key)
        if stored is None:
            return None
        return Run.stored(key, Options.from_dict(stored["options"]), stored["result"],
                          self.store.get)

    def _adopt(self, run_id: str) -> FollowedRun | None:
        """The local run following `run_id`, made from the stream's first entry if needed."""
        if run_id in self._following:
            return self._following[run_id]
        origin = self.broker.run_origin(run_id)
        if origin is None:
            return None
        return self._watch(run_id, origin["key"], origin["source"],
                           Options.from_dict(origin["options"]), origin["env_id"])

    def _watch(self, run_id: str, key: str, source: str, options: Options,
               env_id: str | None = None) -> FollowedRun:
        run = self._following[run_id] = FollowedRun(run_id, key, source, options, env_id)
        return run

    def _follow(self) -> None:
        last_check = 0.0
        while not self._closed.is_set():
            cursors = {run_id: run.cursor for run_id, run in list(self._following.items())}
            if not cursors:
                self._closed.wait(0.2)
                continue
            try:
                for run_id, entry_id, kind, data in self.broker.read(cursors, READ_BLOCK_MS):
                    run = self._following.get(run_id)
                    if run is not None:
                        run.cursor = entry_id
                        self._apply(run, kind, data)
                if time.monotonic() - last_check > CHECK_EVERY_S:
                    last_check = time.monotonic()
                    self._check(cursors)
            except BrokerDown:
                self._closed.wait(1.0)  # Redis restarting: read on from the same cursors
            except Exception:  # keep following the other runs
                log.exception("following runs")
                self._closed.wait(1.0)

    def _apply(self, run: FollowedRun, kind: str, data) -> None:
        """One entry of a run's stream (compiler_core/cluster/protocol.py lists them)."""
        if kind == "queued" and run.env_id is None:
            run.env_id = data["env_id"]
        elif kind == "started":  # the slot's job's steps, replayed into this run's job
            run.job.started(data["user_file"])
        elif kind == "record":
            run.job.add_record(data)
        elif kind == "retry":  # the slot died
            run.requeue(data["message"])
        elif kind == "result":
            self.finish(run, data)
            self.broker.dispatch(run.env_id)  # its slot is free: the next client's turn

    def finish(self, run: FollowedRun, result: dict | None, message: str | None = None) -> None:
        """`RunManager.finish`, then stop following the run and end its submits' leases."""
        super().finish(run, result, message)
        with self.lock:
            self._following.pop(run.remote, None)
        with contextlib.suppress(BrokerDown):  # else they run out (leases.LEASE_S)
            self.broker.release_leases([(h.client, h.id) for h in run.live_handles()])

    def keep(self, run: Run, result: dict) -> bool:
        """With Redis down, or its store full of results in use, the result is kept in this
        server's memory only (`RedisStore`, and the run itself); the latter says so."""
        try:
            return super().keep(run, result)
        except StoreFull as full:
            result.setdefault("truncated", []).append({
                "limit": "fleet_store_bytes",
                "message": f"{full}: this page shows it, its share link will not open it"})
            return False
        except BrokerDown:
            return False

    def _check(self, cursors: dict) -> None:
        """Renew the leases of live submits; retry or fail jobs of dead slots; end runs whose
        stream Redis lost."""
        self.broker.renew_leases([(h.client, h.id) for h in self.live()])
        env_ids = {run.env_id for run in self._following.values() if run.env_id}
        self.broker.reap(env_ids)
        for run_id in self.broker.lost_runs(cursors):
            run = self._following.get(run_id)
            if run is not None:
                self.finish(run, None, "the broker lost this run (was Redis restarted without "
                                       "persistence?); submit it again")
