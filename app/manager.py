"""The job manager: a fair queue in front of warm `compiler_core.Worker`s, the store behind them.

- Each submit gets its own handle (`jobs.Handle`); identical submits (same content key) share one
  run: a new submit joins the run already queued or running, or is answered from the store at
  once (a cache hit, whose handle holds the key: results are read through the store's shared
  cache, app/results.py), unless the stored run ended for a transient reason.
- A client (its IP address) may have `per_client` handles queued or running; runs wait in a
  `FairQueue`, so runner threads serve clients in turn.
- Cancelling a handle detaches it; the run is cancelled only when no live handle is left.
- Each worker has one runner thread; the user's code only ever runs inside the worker's
  children, never in this process. Every finished result except a cancelled one is stored.
"""

from __future__ import annotations

import json
import threading
import time

from compiler_core import (ErrorKind, Options, Worker, empty_result, engine_version,
                           environment_id, environment_identity)

from .errors import ApiError
from .fairqueue import FairQueue
from .jobs import Handle, Run
from .results import CachedStore
from .store import Store, content_key

MAX_QUEUED = 64
PER_CLIENT = 2
KEEP_JOBS_S = 3600
RESULT_CACHE_BYTES = 128 * 1024 * 1024
PROBE_SOURCE = "# torchbolt's start-up probe: reports the environment\n"
WARM_CLIENT = "torchbolt warm-up"


def cancelled(message: str) -> dict:
    return empty_result(ErrorKind.CANCELLED.error(message))


def limit_reached(per_client: int) -> ApiError:
    return ApiError(429, f"you already have {per_client} jobs queued or running (the limit "
                         f"per client is {per_client}); wait for one to finish or cancel one")


class JobManager:
    def __init__(self, store: Store, workers: list[Worker], per_client: int = PER_CLIENT,
                 max_queued: int = MAX_QUEUED, warm: tuple[str, ...] = (),
                 cache_bytes: int = RESULT_CACHE_BYTES):
        self.store = CachedStore(store, cache_bytes)
        version = engine_version()  # part of every content key: an upgrade never serves stale
        self.engine = json.dumps(version, sort_keys=True)
        self.environment: dict = {"torch": version["torch"]}
        self.per_client, self.max_queued = per_client, max_queued
        self._workers = workers
        self._warm = warm  # sources run once the workers are ready, unless already stored
        self._queue = FairQueue()
        self._handles: dict[str, Handle] = {}
        self._active: dict[str, Run] = {}  # content key -> queued or running run
        self._lock = threading.Lock()

    def start(self) -> "JobManager":
        """Start the workers and their runner threads; returns at once (warm-up is ~15 s)."""
        for index, worker in enumerate(self._workers):
            worker.start()
            threading.Thread(target=self._runner, args=(worker, index == 0), daemon=True,
                             name=f"torchbolt-runner-{index}").start()
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
        env_id, engine = self._environment(environment)
        key = content_key(source, options.to_dict(), engine)
        with self._lock:
            self._prune()
            run = self._joinable(key)
            if run is None:
                stored = self.store.get(key)
                error = (stored["result"].get("error") or {}).get("type") if stored else None
                if stored and not ErrorKind.is_transient(error):  # transient: run it again
                    run = Run.stored(key, options, stored["result"], self.store.get)
                    return self._add(Handle(run, client))
            self._admit(client)
            if run is None:
                run = self._active[key] = self._enqueue(key, source, options, client, env_id)
            return self._add(Handle(run, client))

    def _admit(self, client: str) -> None:
        """A 429 when `client` already has `per_client` submits queued or running."""
        if self.live_count(client) >= self.per_client:
            raise limit_reached(self.per_client)

    def _environment(self, requested: str | None) -> tuple[str | None, str]:
        """(environment id, engine string of the content key) a submit runs in."""
        if not self._workers:
            raise ApiError(503, "this server has no compile workers (read-only mode)")
        ours = [env["id"] for env in self.environments()]
        if requested is not None and requested not in ours:
            raise ApiError(400, f"unknown environment {requested!r}; GET /api/status lists them")
        return requested, self.engine

    def _joinable(self, key: str) -> Run | None:
        run = self._active.get(key)
        return None if run is None or run.job.cancelled else run  # being cancelled: start afresh

    def _enqueue(self, key: str, source: str, options: Options, client: str,
                 env_id: str | None) -> Run:
        if self._queue.qsize() >= self.max_queued:
            raise ApiError(503, f"the compile queue is full ({self.max_queued} jobs); "
                                "try again in a minute")
        run = Run(key, source, options)
        run.emit({"type": "status", "status": "queued",
                  "position": self._queue.position_for(client)})
        self._queue.put(client, run)
        return run

    def environments(self) -> list[dict]:
        """The one environment of this server's workers, once the probe has run."""
        if not self._workers or "device" not in self.environment:
            return []
        return [{"id": environment_id(self.environment),
                 **environment_identity(self.environment), "workers": len(self._workers)}]

    def status(self) -> dict:
        return {"environment": self.environment, "environments": self.environments()}

    def warm(self, sources) -> list[Handle]:
        """Run these sources with the default options (a page's first submit) unless their
        results are stored, so the page's first visit is answered from the store."""
        return [self.submit(source, Options(), WARM_CLIENT) for source in sources]

    def cancel(self, handle: Handle) -> None:
        """Detach this handle; cancel its run when no one else is waiting for it."""
        with self._lock:
            run = handle.run
            if handle.is_finished:
                return
            others = len(run.live_handles()) - 1
            handle.detach("cancelled" + (f"; the same code keeps running for {others} other "
                                         f"submit{'s' * (others > 1)}" if others else ""))
            if others:
                return
            run.job.cancel()
            if self._queue.remove(run):
                self._end(run)
                run.finish(cancelled("cancelled before it started"))

    def get(self, job_id: str) -> Handle | None:
        return self._handles.get(job_id)

    def live_count(self, client: str) -> int:
        """This client's handles that are queued or running."""
        return sum(1 for h in self._handles.values() if h.client == client and not h.is_finished)

    def result_for(self, key: str) -> dict | None:
        """The result under a content key: a live run's (maybe partial), else the stored one."""
        run = self._active.get(key)
        if run is not None and run.current_result() is not None:
            return run.current_result()
        stored = self.store.get(key)
        return stored["result"] if stored else None

    def _add(self, handle: Handle) -> Handle:
        self._handles[handle.id] = handle
        return handle

    def _end(self, run: Run) -> None:
        if self._active.get(run.key) is run:
            del self._active[run.key]

    def _prune(self) -> None:
        now = time.monotonic()
        for job_id in [h.id for h in self._handles.values()
                       if h.is_finished and now - h.finished > KEEP_JOBS_S]:
            del self._handles[job_id]

    # -- runner threads
    def _runner(self, worker: Worker, probe: bool) -> None:
        worker.wait_ready()
        if probe:
            try:
                self.environment = worker.run(PROBE_SOURCE, Options())["environment"]
            except Exception:  # the environment badge stays partial; jobs still run
                pass
            self.warm(self._warm)
        while True:
            run = self._queue.get()
            try:
                self._run(worker, run)
            except Exception as exc:  # the engine failed, not the user's code: keep serving
                run.finish(None, message=f"the compile engine failed: {type(exc).__name__}: {exc}")
            finally:
                with self._lock:
                    self._end(run)

    def _run(self, worker: Worker, run: Run) -> None:
        if run.job.cancelled:
            run.finish(cancelled("cancelled before it started"))
            return
        result = worker.execute(run.job).result
        if (result.get("error") or {}).get("type") != ErrorKind.CANCELLED:
            self.store.put(run.key, run.source, run.options, result)
        run.finish(result)
