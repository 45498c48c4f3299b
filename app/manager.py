"""The run manager: a fair queue in front of warm `compiler_core.Worker`s, the store behind them.

- Each submit gets its own handle (`runs.Handle`); identical submits (same content key) share one
  run: a new submit joins the run already queued or running, or is answered from the store at
  once (a cache hit, whose handle holds the key: results are read through the store's shared
  cache, app/results.py), unless the stored run ended for a transient reason.
- A client (its IP address) may have `per_client` handles queued or running; runs wait in a
  `FairQueue`, so runner threads serve clients in turn.
- Cancelling a handle detaches it; the run is cancelled only when no live handle is left.
- Each worker has one runner thread; the user's code only ever runs inside the worker's
  children, never in this process. Every finished result except a cancelled one is stored, on a
  thread of its own (a big result takes seconds to compress: the runner goes on to the next
  run meanwhile); the run's handles hear it ended once it is stored, and the run then keeps
  only its key (app/runs.py).

These rules are the Redis manager's too (app/broker.py), which overrides public steps only: of a
submit (`choose_environment`, `joinable`, `admit`, `enqueue`, `add`), of finding a handle
(`lookup`), of a cancel, and of a run's end (`finish`, `keep`). Every queued run ends through
`finish`, whichever path ended it (the lifecycle itself is app/runs.py's).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid

from compiler_core import (ErrorKind, FairQueue, Options, Worker, empty_result, engine_version,
                           environment_id, environment_identity)

from .errors import ApiError
from .results import CachedStore
from .runs import Handle, Run
from .store import Store, content_key

MAX_QUEUED = 64
PER_CLIENT = 2
KEEP_HANDLES_S = 3600
RESULT_CACHE_BYTES = 128 * 1024 * 1024
PROBE_SOURCE = "# torchbolt's start-up probe: reports the environment\n"
WARM_CLIENT = "torchbolt warm-up"
log = logging.getLogger("torchbolt.manager")


class Pool:
    """The workers of one Python environment (`Worker.python`), their fair queue, and the
    environment their first worker's probe reported. The first pool is the server's own Python;
    others come from `torchbolt serve --environment PYTHON`."""

    def __init__(self, workers: list[Worker]):
        self.workers = workers
        self.queue = FairQueue()
        self.environment: dict = {}
        self.probe_error: str | None = None  # why its probe reported no environment

    @property
    def id(self) -> str | None:
        """Its environment id, once the probe has run (None before: not listed, not chosen)."""
        return environment_id(self.environment) if "device" in self.environment else None

    def listing(self) -> dict:
        return {"id": self.id, **environment_identity(self.environment),
                "workers": len(self.workers)}

    def unavailable(self) -> dict:
        """Its entry when its probe failed: named as a listed one is, as far as the probe told
        (null where it told nothing), and by the interpreter its workers run (the server's own
        or `--environment PYTHON`), with why."""
        return {**self.listing(), "python": getattr(self.workers[0], "python", None),
                "error": self.probe_error}

    def probe(self, worker: Worker) -> None:
        """Learn the environment from a first job on `worker`; when that job reports none (it
        failed: its job process died, an import broke), say why in the log and the status."""
        try:
            result = worker.run(PROBE_SOURCE, Options())
            self.environment = result.get("environment") or {}
            error = result.get("error")
            failure = error and f"{error['type']}: {error['message']}"
        except Exception as exc:
            failure = f"{type(exc).__name__}: {exc}"
        if "device" not in self.environment:
            self.probe_error = failure or "its probe job reported no environment"
            log.error("the start-up probe of %s failed, so its environment is not offered: %s",
                      getattr(worker, "python", "the worker"), self.probe_error)


def pools_of(workers: list[Worker]) -> list[Pool]:
    """One pool per Python the workers run, in the order first met."""
    by_python: dict[str | None, list[Worker]] = {}
    for worker in workers:
        by_python.setdefault(getattr(worker, "python", None), []).append(worker)
    return [Pool(group) for group in by_python.values()]


def cancelled(message: str) -> dict:
    return empty_result(ErrorKind.CANCELLED.error(message))


def limit_reached(per_client: int) -> ApiError:
    return ApiError(429, f"you already have {per_client} jobs queued or running (the limit "
                         f"per client is {per_client}); wait for one to finish or cancel one")


class RunManager:
    def __init__(self, store: Store, workers: list[Worker], per_client: int = PER_CLIENT,
                 max_queued: int = MAX_QUEUED, warm: tuple[str, ...] = (),
                 cache_bytes: int = RESULT_CACHE_BYTES):
        self.store = CachedStore(store, cache_bytes)
        version = engine_version()  # part of every content key: an upgrade never serves stale
        self.engine = json.dumps(version, sort_keys=True)
        self.environment: dict = {"torch": version["torch"]}
        self.per_client, self.max_queued = per_client, max_queued
        self._workers = workers
        self._pools = pools_of(workers)
        self._warm = warm  # sources run once the workers are ready, unless already stored
        self._handles: dict[str, Handle] = {}
        self._active: dict[str, Run] = {}  # content key -> queued or running run
        # Guards the handles and active runs (a scale-out manager's followed runs too); re-entrant
        # because a cancel holding it may end a run, which takes it again.
        self.lock = threading.RLock()

    def start(self) -> "RunManager":
        """Start the workers and their runner threads; returns at once (warm-up is ~15 s)."""
        for number, pool in enumerate(self._pools):
            for index, worker in enumerate(pool.workers):
                worker.start()
                threading.Thread(target=self._runner, args=(pool, worker, index == 0),
                                 daemon=True, name=f"torchbolt-runner-{number}.{index}").start()
        return self

    def wait_ready(self) -> None:
        for worker in self._workers:
            worker.wait_ready()

    def close(self) -> None:
        for worker in self._workers:
            worker.close()

    # -- requests
    def submit(self, source: str, options: Options, client: str,
               environment: str | None = None) -> Handle:
        env_id, engine = self.choose_environment(environment)
        key = content_key(source, options.to_dict(), engine)
        with self.lock:
            self._prune()
            run = self.joinable(key)
            if run is None:
                stored = self.store.get(key)
                error = (stored["result"].get("error") or {}).get("type") if stored else None
                if stored and not ErrorKind.is_transient(error):  # transient: run it again
                    run = Run.stored(key, options, stored["result"], self.store.get)
                    return self.add(Handle(run, client))
            handle_id = self.admit(client)
            if run is None:
                run = self._active[key] = self.enqueue(key, source, options, client, env_id,
                                                       handle_id)
            return self.add(Handle(run, client, handle_id))

    # -- the steps of a submit (app/broker.py replaces these)
    def admit(self, client: str) -> str:
        """The handle id of `client`'s new live submit; a 429 when it already has `per_client`
        submits queued or running."""
        if self.live_count(client) >= self.per_client:
            raise limit_reached(self.per_client)
        return uuid.uuid4().hex

    def choose_environment(self, requested: str | None) -> tuple[str | None, str]:
        """(environment id, engine string of the content key) a submit runs in."""
        if not self._workers:
            raise ApiError(503, "this server has no compile workers (read-only mode)")
        pool = self._pool(requested)
        if requested is not None and pool is None:
            raise ApiError(400, f"unknown environment {requested!r}; GET /api/status lists them")
        if pool is None or pool is self._pools[0]:
            return requested, self.engine
        engine = {**json.loads(self.engine), "torch": pool.environment["torch"]}
        return requested, json.dumps(engine, sort_keys=True)  # engine_version's, in its torch

    def _pool(self, env_id: str | None) -> Pool | None:
        """The pool of an environment id (None: the server's own, the first)."""
        if env_id is None:
            return self._pools[0] if self._pools else None
        return next((pool for pool in self._pools if pool.id == env_id), None)

    def joinable(self, key: str) -> Run | None:
        """The run a submit of `key` joins: queued or running, not being cancelled."""
        run = self._active.get(key)
        return None if run is None or run.job.cancelled else run  # being cancelled: start afresh

    def enqueue(self, key: str, source: str, options: Options, client: str,
                env_id: str | None, handle_id: str) -> Run:
        """A new run of `key`, queued for `client`'s turn (told `queued` with its place);
        `handle_id` is what `admit` gave this submit (the fleet's lease, released on a refusal)."""
        queue = self._pool(env_id).queue
        refusal = queue.refusal(client, self.max_queued)  # compiler_core/fairness.py
        if refusal:
            raise ApiError(*refusal, headers={"Retry-After": "30"})
        run = Run(key, source, options)
        run.emit({"type": "status", "status": "queued", "position": queue.position_for(client)})
        queue.put(client, run)
        return run

    def environments(self) -> list[dict]:
        """The environments of this server's workers (one per Python), once probed; the
        server's own first."""
        return [pool.listing() for pool in self._pools if pool.id is not None]

    def status(self) -> dict:
        """The server's environment, those it offers and those whose probe failed, with why."""
        return {"environment": self.environment, "environments": self.environments(),
                "unavailable": [pool.unavailable() for pool in self._pools if pool.probe_error]}

    def warm(self, sources) -> list[Handle]:
        """Run these sources with the default options (a page's first submit) unless their
        results are stored, so the page's first visit is answered from the store."""
        return [self.submit(source, Options(), WARM_CLIENT) for source in sources]

    def cancel(self, handle: Handle) -> None:
        """Detach this handle; cancel its run when no one else is waiting for it."""
        with self.lock:
            run = handle.run
            if handle.is_finished:
                return
            others = len(run.live_handles()) - 1
            handle.detach("cancelled" + (f"; the same code keeps running for {others} other "
                                         f"submit{'s' * (others > 1)}" if others else ""))
            if others:
                return
            run.job.cancel()
            if any(pool.queue.remove(run) for pool in self._pools):
                self.finish(run, cancelled("cancelled before it started"))

    def get(self, handle_id: str) -> Handle | None:
        """The handle of an id: this server's, else one `lookup` finds."""
        handle = self._handles.get(handle_id)
        if handle is None and (handle := self.lookup(handle_id)) is not None:
            with self.lock:
                self._handles[handle_id] = handle
        return handle

    def lookup(self, handle_id: str) -> Handle | None:
        """The handle of an id this server did not make: none here (with Redis, one that
        another web server made)."""
        return None

    def live(self) -> list[Handle]:
        """The handles that are queued or running."""
        with self.lock:
            return [h for h in self._handles.values() if not h.is_finished]

    def live_count(self, client: str) -> int:
        """This client's handles that are queued or running."""
        return sum(1 for h in self.live() if h.client == client)

    def result_for(self, key: str) -> dict | None:
        """The result under a content key: a live run's (maybe partial), else the stored one."""
        run = self._active.get(key)
        if run is not None and run.current_result() is not None:
            return run.current_result()
        stored = self.store.get(key)
        return stored["result"] if stored else None

    def add(self, handle: Handle) -> Handle:
        """Keep a submit's handle, so `get` answers for its id."""
        self._handles[handle.id] = handle
        return handle

    # -- the end of a run
    def finish(self, run: Run, result: dict | None, message: str | None = None) -> None:
        """End a queued run, whatever ended it: store its result (off the calling thread, which
        serves other runs), tell its handles, and forget it as its key's active run. `result`
        None: the engine failed (`message` says how)."""
        if result is not None and (result.get("error") or {}).get("type") != ErrorKind.CANCELLED:
            threading.Thread(target=self._store_and_end, args=(run, result, message),
                             daemon=True, name=f"torchbolt-store-{run.key}").start()
        else:  # a cancelled run is not stored: a new submit runs it
            self._end(run, result, message)

    def _store_and_end(self, run: Run, result: dict, message: str | None) -> None:
        try:
            stored = self.keep(run, result)
        except Exception:  # the store failed: the run keeps its result in memory
            log.exception("storing the result of %s", run.key)
            stored = False
        self._end(run, result, message, self.store.get if stored else None)

    def _end(self, run: Run, result: dict | None, message: str | None, load=None) -> None:
        run.finish(result, message=message, load=load)
        with self.lock:
            if self._active.get(run.key) is run:
                del self._active[run.key]

    def keep(self, run: Run, result: dict) -> bool:
        """Store a run's result under its key, before its handles hear that it ended; whether
        it was stored."""
        self.store.put(run.key, run.source, run.options.to_dict(), result)
        return True

    def _prune(self) -> None:
        now = time.monotonic()
        for handle_id in [h.id for h in self._handles.values()
                          if h.is_finished and now - h.finished > KEEP_HANDLES_S]:
            del self._handles[handle_id]

    # -- runner threads
    def _runner(self, pool: Pool, worker: Worker, probe: bool) -> None:
        worker.wait_ready()
        if probe:
            pool.probe(worker)  # on failure the environment badge stays partial; jobs still run
            if pool is self._pools[0]:
                self.environment = pool.environment or self.environment
                self.warm(self._warm)
        while True:
            run = pool.queue.get()
            try:
                self._run(worker, run)
            except Exception as exc:  # the engine failed, not the user's code: keep serving
                self.finish(run, None,
                            message=f"the compile engine failed: {type(exc).__name__}: {exc}")

    def _run(self, worker: Worker, run: Run) -> None:
        if run.job.cancelled:
            self.finish(run, cancelled("cancelled before it started"))
            return
        self.finish(run, worker.execute(run.job).result)
