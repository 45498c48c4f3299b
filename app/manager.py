"""The job manager: a queue in front of warm `compiler_core.Worker`s, the store behind them.

- An identical submit (same content key) joins the job already queued or running, or is answered
  from the store at once (a cache hit), unless the stored run ended for a transient reason.
- Each worker has one runner thread that takes jobs off the shared queue; the user's code only
  ever runs inside the worker's forked children, never in this process.
- Every finished result except a cancelled one is stored, so it can be shared.
"""

from __future__ import annotations

import importlib.metadata
import os
import queue
import shutil
import tempfile
import threading
import time

from compiler_core import Options, Worker
from compiler_core.result import RESULT_VERSION, build_result

from .errors import ApiError
from .jobs import Job
from .store import Store, content_key

# Runs that ended this way say nothing lasting about the code: run them again on a resubmit.
TRANSIENT_ERRORS = {"Timeout", "MemoryLimit", "Crash", "Cancelled", "WorkerDied", "ServerError"}
MAX_QUEUED = 64
KEEP_JOBS_S = 3600
PROBE_SOURCE = "# torchbolt's start-up probe: reports the environment\n"


def engine_version() -> str:
    """Part of every content key, so an upgraded engine never serves stale results."""
    try:
        torch = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch = "none"
    return f"torch {torch}; result v{RESULT_VERSION}"


class JobManager:
    def __init__(self, store: Store, workers: list[Worker]):
        self.store = store
        self.engine = engine_version()
        self.environment: dict = {"torch": self.engine.split(";")[0].removeprefix("torch ")}
        self._workers = workers
        self._queue: "queue.Queue[Job]" = queue.Queue()
        self._jobs: dict[str, Job] = {}
        self._active: dict[str, Job] = {}  # content key -> queued or running job
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
    def submit(self, source: str, options: Options) -> Job:
        if not self._workers:
            raise ApiError(503, "this server has no compile workers (read-only mode)")
        key = content_key(source, options.to_dict(), self.engine)
        with self._lock:
            self._prune()
            if key in self._active:
                return self._active[key]
            job = Job(key, source, options.to_dict())
            stored = self.store.get(key)
            if stored and (stored["result"].get("error") or {}).get("type") not in TRANSIENT_ERRORS:
                job.finish(stored["result"], cached=True)
            elif self._queue.qsize() >= MAX_QUEUED:
                raise ApiError(503, f"the compile queue is full ({MAX_QUEUED} jobs); "
                                    "try again in a minute")
            else:
                self._active[key] = job
                job.emit({"type": "status", "status": "queued",
                          "position": self._queue.qsize() + 1})
                self._queue.put(job)
            self._jobs[job.id] = job
            return job

    def get(self, job_id: str) -> Job | None:
        return self._jobs.get(job_id)

    def result_for(self, key: str) -> dict | None:
        """The result under a content key: a live job's (maybe partial), else the stored one."""
        job = self._active.get(key)
        if job is not None and job.current_result() is not None:
            return job.current_result()
        stored = self.store.get(key)
        return stored["result"] if stored else None

    def _prune(self) -> None:
        now = time.monotonic()
        for job_id in [j.id for j in self._jobs.values()
                       if j.is_finished and now - j.finished > KEEP_JOBS_S]:
            del self._jobs[job_id]

    # -- runner threads
    def _runner(self, worker: Worker, probe: bool) -> None:
        worker.wait_ready()
        if probe:
            try:
                self.environment = worker.run(PROBE_SOURCE, Options())["environment"]
            except Exception:  # the environment badge stays partial; jobs still run
                pass
        while True:
            job = self._queue.get()
            try:
                self._run(worker, job)
            except Exception as exc:  # the engine failed, not the user's code: keep serving
                job.finish(None, message=f"the compile engine failed: {type(exc).__name__}: {exc}")
            finally:
                with self._lock:
                    self._active.pop(job.key, None)

    def _run(self, worker: Worker, job: Job) -> None:
        if job.cancel.is_set():
            error = {"type": "Cancelled", "message": "cancelled before it started", "line": None}
            job.finish(build_result([], "", {"error": error}))
            return
        folder = tempfile.mkdtemp(prefix="torchbolt-")
        try:
            user_file = os.path.join(folder, "main.py")
            with open(user_file, "w", encoding="utf-8") as fh:
                fh.write(job.source)
            job.set_running(user_file)
            result = worker.run(job.source, Options.from_dict(job.options), user_file=user_file,
                                on_record=job.on_record, cancel=job.cancel)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if (result.get("error") or {}).get("type") != "Cancelled":
            self.store.put(job.key, job.source, job.options, result)
        job.finish(result)
