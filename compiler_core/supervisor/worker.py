"""Warm workers, the supervisor side: runs in the caller's process and never imports torch.

`Worker` starts one zygote (`runtime/zygote.py`) inside the sandbox (`sandbox.py`) and runs one
job at a time on it. Per job it prepares a *job process* (`process.py`, `JobProcess`): a root-only
host folder holding the job's output files, a control socket, and a cgroup (`cgroups.py`). The
zygote forks the process; it joins the job's cgroup before it runs any user code (the kernel
tells us its host PID on the control socket), then isolates itself (`runtime/jail.py`). On a GPU
machine the next job process is forked ahead, so it has initialised CUDA before its job.

The supervisor streams the records into the `Job` (`job.py`), enforces the wall-clock, memory and
CPU-time limits by killing the job's whole cgroup (all its processes), and turns the way the job
ended into its result (`ending.py`).

A GPU job process warms up for seconds (CUDA, a first Triton compile; 5-7 s beside a running
job on the H200): longer than a small job runs. So a GPU machine keeps job processes warming
ahead ("standbys"), as many as the load needs: two (a job right after another finds the second
warm), and up to `standbys` while jobs arrive faster than a process warms up (a job found its
standby still warming); fewer again when a job leaves a warm standby unused. A job takes a warm
one, else the one warming longest, and a new one starts behind it: one warm-up per job, however
many wait.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

from . import sandbox
from .buildcache import BuildCache
from ..options import Options
from ..wire import RecordTail
from .ending import JobOutcome, job_result, read_capped
from .job import Job
from .process import JOBS_ROOT, JobProcess, open_lock, remove_stale_jobs

POLL_S = 0.02
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STARTUP_TIMEOUT_S = 300
MIN_STANDBYS, STANDBYS = 2, 3  # job processes kept warming on a GPU machine (a CUDA context each)
MEMORY_ACT_AT = 0.9  # of the limit: stop the job with its traceback before the kernel kills it
_serial = iter(range(1, 1 << 62))


def gpu_lock_path() -> str:
    """The timing lock of the GPU this process's jobs use (the first visible one)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip() or "0"
    return os.path.join(tempfile.gettempdir(), f"torchbolt-gpu-{visible.replace('/', '_')}.lock")


class WorkerError(RuntimeError):
    """The worker itself (not the user's script) failed."""


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class Worker:
    """One warm zygote; `run` executes one job at a time on it.

    `sandbox`: None runs jobs in the sandbox where `sandbox.check()` says it works (else
    unsandboxed), True requires it (WorkerError when missing), False never uses it."""

    def __init__(self, sandbox: bool | None = None, timing_lock: str | None = None,
                 warm: bool = True, build_cache: BuildCache | None = None,
                 standbys: int = STANDBYS, python: str | None = None) -> None:
        """`timing_lock`: a lock file that each job holds, with flock, for its timings only,
        and a GPU job's process for its warm-up: jobs of workers sharing it compile at once but
        never time at once, nor while a job process warms up. On a GPU machine the default is
        the GPU's own (`gpu_lock_path`), which all workers of this machine share.
        `warm=False`: no CPU warm-up compile in the zygote, which only later jobs gain from (the
        CLI runs one job; its first compile pays what a plain `python script.py` pays).
        `build_cache`: one trusted user's (the CLI's) kept kernels of this script and the
        precompiled header (buildcache.py); never for a server, whose jobs must not read what
        another job wrote.
        `standbys`: where each job gets a fresh process (a GPU machine), how many at most are
        kept warming ahead of the jobs (at least 1).
        `python`: the interpreter of another environment (a venv with another torch) that runs
        the jobs, with this checkout's engine on its path; default: this one."""
        self.requested_sandbox = sandbox
        self.timing_lock = timing_lock
        self.warm = warm
        self.build_cache = build_cache
        self.python = python or sys.executable
        self.sandboxed = False
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._processes: dict[str, JobProcess] = {}
        self._ready = threading.Event()
        self._standbys: list[JobProcess] = []  # oldest first
        self.standbys = max(1, standbys)
        self._fewest_standbys = min(MIN_STANDBYS, self.standbys)
        self._wanted_standbys = self._fewest_standbys  # follows the load
        self.fresh_process_per_job = False
        self.warm_s: float | None = None
        self._name = f"{os.getpid()}-w{next(_serial)}"
        self._group_layout: str | None = None
        self._log_path = os.path.join(JOBS_ROOT, f"{self._name}.log")  # the zygote's stderr

    # -- zygote lifecycle
    def start(self) -> "Worker":
        if self._proc is not None and self._proc.poll() is None:
            return self
        check = sandbox.check()
        if self.requested_sandbox and not check.ok:
            raise WorkerError(f"the sandbox is not available: {check.reason}")
        self.sandboxed = check.ok if self.requested_sandbox is None else self.requested_sandbox
        self._group_layout = check.cgroups
        os.makedirs(JOBS_ROOT, mode=0o711, exist_ok=True)
        remove_stale_jobs(self._group_layout)
        self._ready.clear()
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        other = None if self.python == sys.executable else self.python
        env = {**sandbox.environment(other), "TORCHBOLT_PROTOCOL_FD": str(theirs.fileno())}
        if not self.warm:
            env["TORCHBOLT_WARM"] = "0"
        writable: tuple[tuple[str, str], ...] = ()
        if self.build_cache:
            writable, kept = self.build_cache.attach(self.sandboxed)
            env.update(kept)
        command = [self.python, "-m", "compiler_core.runtime.zygote"]
        if self.sandboxed:
            command = sandbox.bwrap_command(command, env, writable, other)
        else:
            env["PYTHONPATH"] = PACKAGE_ROOT
        log = open(self._log_path, "w")
        self._proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                      env=env, cwd="/", pass_fds=[theirs.fileno()],
                                      start_new_session=True)
        log.close()
        theirs.close()
        threading.Thread(target=self._read_protocol, args=(self._sock,), daemon=True).start()
        return self

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT_S) -> float:
        """Wait for the zygote; where each job gets a fresh process (a GPU machine), also open
        the standbys now, so that they have warmed up (CUDA, a first compile) before the first
        jobs arrive. Returns the zygote's warm-up seconds."""
        self._await_ready(timeout)
        with self._lock:
            self._fill_standbys(Options().disk_mb)
        return self.warm_s or 0.0

    def _await_ready(self, timeout: float = STARTUP_TIMEOUT_S) -> None:
        """Until the zygote says it is ready; a WorkerError at once when it exited first (a
        Python that cannot import the engine, a failed sandbox), naming why from its log."""
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.2):
            if self._proc is not None and self._proc.poll() is not None:
                raise WorkerError(f"the worker exited before it was ready (exit code "
                                  f"{self._proc.returncode}): {self._log_tail()}")
            if time.monotonic() > deadline:
                raise WorkerError(f"the worker did not start within {timeout:.0f} s "
                                  f"(log: {self._log_path})")

    def _log_tail(self, chars: int = 1500) -> str:
        """The end of the zygote's log (its own output: it runs no user code)."""
        try:
            with open(self._log_path, "rb") as fh:
                fh.seek(max(0, os.path.getsize(self._log_path) - chars))
                return fh.read().decode("utf-8", "replace").strip() or "(its log is empty)"
        except OSError:
            return f"(no log at {self._log_path})"

    def close(self) -> None:
        for process in list(self._processes.values()):
            process.close(self.sandboxed)
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()  # the zygote, or the bwrap around it
            self._proc.wait()
        if self._sock is not None:  # a zygote still running (root's two bwraps) ends on this
            self._sock.close()
        with contextlib.suppress(OSError):
            os.remove(self._log_path)
        if self.build_cache:
            self.build_cache.release()

    def _read_protocol(self, sock: socket.socket) -> None:
        try:
            while data := sock.recv(1 << 16):
                message = json.loads(data)
                if message.get("ready"):
                    self.warm_s = message["warm_s"]
                    self.fresh_process_per_job = message["fresh_process_per_job"]
                    if message["gpu"] and self.timing_lock is None:
                        self.timing_lock = gpu_lock_path()
                    self._ready.set()
                elif message.get("process") in self._processes:
                    self._processes[message["process"]].events.put(("exit", message["exit"]))
        except OSError:
            pass
        self._ready.clear()
        for process in list(self._processes.values()):  # the zygote died: unblock anyone waiting
            process.events.put(("zygote_died",))

    def _fork_process(self, disk_mb: int) -> JobProcess:
        """A job process, forked now; one that warms up (a GPU's) gets the timing lock too."""
        process = JobProcess(f"{self._name}-{next(_serial)}", self.sandboxed, self._group_layout)
        self._processes[process.name] = process
        if self.fresh_process_per_job and self.timing_lock:
            process.their_fds.append(open_lock(self.timing_lock))
        other = None if self.python == sys.executable else self.python  # as the zygote's
        spec = process.spec(disk_mb, self.sandboxed, other)
        socket.send_fds(self._sock, [json.dumps(spec).encode()], process.their_fds)
        process.handed_over()
        return process

    def _fill_standbys(self, disk_mb: int) -> None:
        if self.fresh_process_per_job:
            while len(self._standbys) < self._wanted_standbys:
                self._standbys.append(self._fork_process(disk_mb))

    def _take_standby(self) -> JobProcess | None:
        """A standby that has warmed up, else the one warming longest (and then one more is
        wanted); None if none is left."""
        alive = [process for process in self._standbys if process.name in self._processes]
        process = next((s for s in alive if s.warm.is_set()), alive[0] if alive else None)
        self._standbys = [s for s in alive if s is not process]
        if process is not None and not process.warm.is_set():
            self._wanted_standbys = min(self.standbys, self._wanted_standbys + 1)
        elif any(s.warm.is_set() for s in self._standbys):
            self._wanted_standbys = max(self._fewest_standbys, self._wanted_standbys - 1)
        return process

    # -- jobs
    def run(self, source: str, options: Options | None = None, user_file: str | None = None,
            listener=None) -> dict:
        """Run a script to its end and return its result (see `execute`)."""
        job = Job(source, options, user_file, listener)
        self.execute(job)
        return job.result

    def execute(self, job: Job) -> Job:
        """Run `job` to its end (one job at a time per worker); its result is `job.result`.
        The job's `user_file` names the script (its base name is kept); it is never read."""
        with self._lock:
            self.start()._await_ready()
            process = self._take_standby() or self._fork_process(job.options.disk_mb)
            self._fill_standbys(job.options.disk_mb)  # the next jobs' processes warm meanwhile
            try:
                job.finish(self._run_in(process, job))
            finally:
                del self._processes[process.name]
                process.close(self.sandboxed)
        return job

    def _run_in(self, process: JobProcess, job: Job) -> dict:
        options = job.options
        inner_file = os.path.join(process.job_dir,
                                  os.path.basename(job.requested_file or "main.py"))
        with open(process.path("source.py"), "w", encoding="utf-8") as fh:
            fh.write(job.source)
        if process.group:
            process.group.set_limits(options.memory_mb << 20, options.pids)
        outcome = JobOutcome()
        tail = RecordTail(process.path("records.jsonl"))
        job.live_output = lambda: {name: read_capped(process.path(f"{name}.txt"),
                                                     options.output_limit)
                                   for name in ("stdout", "stderr")}
        self._supervise(process, job, outcome, tail,
                        {"user_file": inner_file, "options": options.to_dict()})
        process.kill(dump_traceback=False, sandboxed=self.sandboxed)  # anything left running
        while job.over_limit is None and (batch := tail.new_records()):  # what is left
            for record in batch:
                job.add_record(record)
        return job_result(process, job, inner_file, outcome, tail.dropped,
                          time.monotonic() - (outcome.started or time.monotonic()))

    def _supervise(self, process: JobProcess, job: Job, outcome: JobOutcome, tail: RecordTail,
                   message: dict) -> None:
        waiting_since = time.monotonic()
        while True:
            while not process.events.empty():
                event = process.events.get()
                if event[0] == "ready":
                    process.send_job(message, process.path("source.py"), self.timing_lock)
                elif event[0] == "started":
                    outcome.started = time.monotonic()
                    job.started(message["user_file"])
                elif event[0] == "exit":
                    outcome.returncode = event[1]
                elif event[0] == "zygote_died":
                    outcome.killed_for = outcome.killed_for or "worker"
                    return
            for record in tail.new_records():
                job.add_record(record)
            if tail.over_limit:
                job.stop_for(tail.over_limit)
            if outcome.returncode is not None:
                return
            if outcome.killed_for is None:
                reason = self._limit_hit(process, job, outcome.started, waiting_since) or (
                    "disk" if outcome.started and self.build_cache and self.build_cache.over_limit()
                    else None)  # the CLI's build cache counts toward the disk limit
                if reason:
                    outcome.killed_for = reason
                    process.kill(dump_traceback=reason not in ("cancelled", "worker", "disk"),
                                 sandboxed=self.sandboxed)
                    if process.pid is None:
                        return
            time.sleep(POLL_S)

    @staticmethod
    def _limit_hit(process: JobProcess, job: Job, started, waiting_since) -> str | None:
        options = job.options
        if job.cancelled:
            return "cancelled"
        if job.over_limit:
            return "records"
        if started is None:
            return "worker" if time.monotonic() - waiting_since > STARTUP_TIMEOUT_S else None
        if time.monotonic() - started > options.timeout:
            return "timeout"
        if process.group:
            used_mb = process.group.memory_bytes() / 2**20
            if used_mb > MEMORY_ACT_AT * options.memory_mb or process.group.oom_killed():
                return "memory"
            if process.group.cpu_seconds() > options.cpu_s:
                return "cpu"
        elif process.pid is not None and _rss_mb(process.pid) > options.memory_mb:
            return "memory"
        return None
