"""Warm workers: a preloaded parent (the zygote) forks one child per job.

The zygote imports torch and runs one trivial CPU compile, so a job pays neither `import torch`
nor Inductor's lazy initialisation. Each child starts its own session (process group), works in
the job's directory with its output redirected to files, and writes records (see `records.py`).
Where a GPU is visible, the warm-up initialises CUDA, which a forked child cannot inherit: there
the zygote keeps a `Standby` instead, a fresh interpreter that warms up ahead of the next job
and then runs that job itself.

The supervisor (`Worker.run`, in the caller's process) streams the records, enforces the
wall-clock and memory limits by killing the child's whole process group, caps the output, and
turns every way a job can end (finished, exception, timeout, memory, crash, os._exit, cancel)
into one result with a clear `error`.

Protocol on the zygote's pipes, one JSON object per line: the zygote says `{"ready": ...}`; the
supervisor sends a job `{"id", "dir", "source", "user_file", "options"}`; the zygote answers
`{"id", "pid"}` when the job's process has it and `{"id", "exit": returncode}` when that
process is reaped.
"""

from __future__ import annotations

import json
import os
import queue
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

from .options import OUTPUT_FILE_LIMIT, Options
from .records import RecordTail
from .result import build_result
from .stages.common import user_lines

POLL_S = 0.05
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STARTUP_TIMEOUT_S = 300


# ---------------------------------------------------------------- zygote side (its own process)

def warm_up(compile_once: bool) -> None:
    """Pay torch's import and, with `compile_once`, Inductor's first-compile cost before any
    job. Without it (a Standby on a GPU machine) CUDA is initialised instead: there a first CPU
    compile, C++ toolchain and all, took about a minute on the H200 machine, more than it saves
    a GPU job."""
    import torch
    import torch._dynamo
    import torch._inductor.config as inductor_config
    from torch._inductor import compile_fx  # noqa: F401  (import cost is the point)

    inductor_config.compile_threads = 1  # no compile-worker pool that a fork would orphan
    inductor_config.force_disable_caches = True
    if compile_once:
        torch.compile(lambda x: (x * 2).relu().sum())(torch.randn(8))
        torch._dynamo.reset()
    else:
        import triton  # noqa: F401
        torch.cuda.init()


def _redirect(fd: int, path: str) -> None:
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(target, fd)
    os.close(target)


def isolate(job: dict) -> None:
    """In the job's own process (already its own session): work in the job's folder, with its
    own caches, a cap on file sizes, no stdin, and output to files."""
    os.chdir(job["dir"])
    # Per job: the compiled kernels (and their lowering stages) of this job only.
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(job["dir"], "inductor-cache")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(job["dir"], "triton-cache")
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit raises instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_FILE_LIMIT, OUTPUT_FILE_LIMIT))
    stdin = os.open(os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)
    _redirect(1, "stdout.txt")
    _redirect(2, "stderr.txt")


def child_main(job: dict, protocol_fd: int) -> None:
    """In the forked child: its own session, isolated, then the job. Never returns."""
    try:
        os.close(protocol_fd)
        os.setsid()
        isolate(job)
        run_isolated(job)
    finally:
        os._exit(0)


def run_isolated(job: dict) -> None:
    """In the job's own process, already isolated: run the script and write its records."""
    sys.stdout.reconfigure(line_buffering=True)
    sys.stderr.reconfigure(line_buffering=True)
    import faulthandler
    fault_file = open("fault.txt", "w")
    faulthandler.enable(fault_file, all_threads=False)
    faulthandler.register(signal.SIGUSR1, fault_file, all_threads=False)

    import torch._dynamo
    torch._dynamo.reset()
    from .records import RecordWriter
    from .runner import run_job
    with open("records.jsonl", "w", encoding="utf-8") as stream:
        run_job(job["source"], job["user_file"], Options.from_dict(job["options"]),
                RecordWriter(stream))


def needs_fresh_process() -> bool:
    """Fork only where no GPU is visible (NVML check: it does not initialise CUDA)."""
    import torch
    return os.environ.get("TORCHBOLT_FRESH_PROCESS") == "1" or torch.cuda.is_available()


class Standby:
    """A fresh interpreter, started ahead of the next job, that warms up and then runs that
    job itself (`standby_main`): the GPU machines' way to give jobs a warm process, since a
    forked child cannot inherit the CUDA state the warm-up creates."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            filter(None, [PACKAGE_ROOT, os.environ.get("PYTHONPATH")]))}
        self.proc = subprocess.Popen([sys.executable, "-m", "compiler_core.worker", "--standby"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env, cwd=PACKAGE_ROOT, start_new_session=True)

    def take(self, job: dict) -> subprocess.Popen:
        """Wait for the warm-up to end, then hand the job over; the process runs it (or has
        died, and its exit code tells the supervisor)."""
        for line in self.proc.stdout:
            if line == "ready\n":
                self.proc.stdin.write(json.dumps(job) + "\n")
                self.proc.stdin.close()
                break
        return self.proc


def standby_main() -> None:
    try:
        import torch
        warm_up(compile_once=not torch.cuda.is_available())
        print("ready", flush=True)
        line = sys.stdin.readline()
        if line:  # empty: the zygote went away before handing over a job
            job = json.loads(line)
            isolate(job)
            run_isolated(job)
    finally:
        os._exit(0)


def zygote_main() -> None:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything torch prints goes to stderr, never into the protocol
    started = time.monotonic()
    fresh = needs_fresh_process()
    standby = Standby() if fresh else None
    if not fresh:
        warm_up(compile_once=True)
    lock = threading.Lock()

    def send(message: dict) -> None:
        with lock:
            protocol.write(json.dumps(message) + "\n")

    def reap(job_id: str, wait) -> None:
        send({"id": job_id, "exit": wait()})

    def waitpid(pid: int):
        return lambda: os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

    send({"ready": True, "warm_s": round(time.monotonic() - started, 2), "pid": os.getpid(),
          "fresh_process_per_job": fresh})
    for line in sys.stdin:
        job = json.loads(line)
        if fresh:
            proc, standby = standby.take(job), Standby()  # the next one warms up meanwhile
            pid, wait = proc.pid, proc.wait
        else:
            pid = os.fork()
            if pid == 0:
                child_main(job, protocol.fileno())
            wait = waitpid(pid)
        send({"id": job["id"], "pid": pid})
        threading.Thread(target=reap, args=(job["id"], wait), daemon=True).start()


# ------------------------------------------------------------ supervisor side (caller's process)

class WorkerError(RuntimeError):
    """The worker itself (not the user's script) failed."""


@dataclass
class JobOutcome:
    """What the supervisor observed about how a job ended."""
    returncode: int | None = None
    killed_for: str | None = None  # "timeout", "memory", "cancelled"
    peak_rss_mb: float = 0.0
    events: "queue.Queue[dict]" = field(default_factory=queue.Queue)


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def read_capped(path: str, limit: int) -> str:
    """At most `limit` bytes of a file, with a visible mark when more was written."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            data = fh.read(limit)
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    if size > limit:
        text += f"\n[... output truncated: {size:,} bytes written, first {limit:,} shown ...]\n"
    return text


class Worker:
    """One warm zygote; `run` executes one job at a time on it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._jobs: dict[str, JobOutcome] = {}
        self._ready = threading.Event()
        self.warm_s: float | None = None
        self._counter = 0

    # -- zygote lifecycle
    def start(self) -> "Worker":
        if self._proc is not None and self._proc.poll() is None:
            return self
        self._ready.clear()
        env = {**os.environ, "PYTORCH_NVML_BASED_CUDA_CHECK": "1", "PYTHONUNBUFFERED": "1"}
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "compiler_core.worker"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1, env=env,
            cwd=PACKAGE_ROOT,
            start_new_session=True)
        threading.Thread(target=self._read_protocol, args=(self._proc,), daemon=True).start()
        return self

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT_S) -> float:
        if not self._ready.wait(timeout):
            raise WorkerError(f"the worker did not start within {timeout:.0f} s")
        return self.warm_s or 0.0

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def _read_protocol(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            message = json.loads(line)
            if message.get("ready"):
                self.warm_s = message["warm_s"]
                self._ready.set()
            elif message.get("id") in self._jobs:
                self._jobs[message["id"]].events.put(message)
        self._ready.clear()
        for outcome in self._jobs.values():  # the zygote died: unblock anyone waiting
            outcome.events.put({"zygote_died": True})

    # -- jobs
    def run(self, source: str, options: Options | None = None, user_file: str | None = None,
            on_record=None, cancel: threading.Event | None = None) -> dict:
        """Run a script to its end and return the result; `on_record(record)` streams records."""
        options = options or Options()
        with self._lock:
            self.start().wait_ready()
            job_dir = tempfile.mkdtemp(prefix="torchbolt-job-")
            try:
                return self._run_in(job_dir, source, options, user_file, on_record, cancel)
            finally:
                shutil.rmtree(job_dir, ignore_errors=True)

    def _run_in(self, job_dir, source, options, user_file, on_record, cancel) -> dict:
        if user_file is None:
            user_file = os.path.join(job_dir, "main.py")
            with open(user_file, "w", encoding="utf-8") as fh:
                fh.write(source)
        self._counter += 1
        job_id = f"job{self._counter}"
        outcome = self._jobs[job_id] = JobOutcome()
        started = time.monotonic()
        self._proc.stdin.write(json.dumps({"id": job_id, "dir": job_dir, "source": source,
                                           "user_file": user_file,
                                           "options": options.to_dict()}) + "\n")
        self._proc.stdin.flush()
        try:
            pid = self._supervise(outcome, job_dir, options, on_record, cancel, started)
        finally:
            del self._jobs[job_id]
        if pid is not None:
            try:
                os.killpg(pid, signal.SIGKILL)  # anything the script left running
            except (ProcessLookupError, PermissionError):
                pass
        return self._result(job_dir, user_file, options, outcome, time.monotonic() - started)

    def _supervise(self, outcome, job_dir, options, on_record, cancel, started) -> int | None:
        tail = RecordTail(os.path.join(job_dir, "records.jsonl"))
        pid = None
        while True:
            while not outcome.events.empty():
                message = outcome.events.get()
                if message.get("zygote_died"):
                    outcome.killed_for = outcome.killed_for or "worker"
                    return pid
                if "pid" in message:  # the job starts now (a Standby may still have been
                    pid, started = message["pid"], time.monotonic()  # warming up): limits too
                if "exit" in message:
                    outcome.returncode = message["exit"]
            for record in tail.new_records():
                if on_record:
                    on_record(record)
            if outcome.returncode is not None:
                return pid
            if pid is not None and outcome.killed_for is None:
                outcome.peak_rss_mb = max(outcome.peak_rss_mb, _rss_mb(pid))
                reason = self._limit_hit(outcome, options, cancel, started)
                if reason:
                    outcome.killed_for = reason
                    self._kill(pid, dump_traceback=reason != "cancelled")
            time.sleep(POLL_S)

    @staticmethod
    def _limit_hit(outcome, options, cancel, started) -> str | None:
        if cancel is not None and cancel.is_set():
            return "cancelled"
        if time.monotonic() - started > options.timeout:
            return "timeout"
        if outcome.peak_rss_mb > options.memory_mb:
            return "memory"
        return None

    @staticmethod
    def _kill(pid: int, dump_traceback: bool) -> None:
        try:
            if dump_traceback:  # faulthandler writes where the script was, for the message
                os.kill(pid, signal.SIGUSR1)
                time.sleep(0.2)
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def _result(self, job_dir, user_file, options, outcome, duration) -> dict:
        from .records import read_records
        records = read_records(os.path.join(job_dir, "records.jsonl"))
        finished = any(r["name"] == "run_end" for r in records)
        run = {
            "options": options.to_dict(),
            "stdout": read_capped(os.path.join(job_dir, "stdout.txt"), options.output_limit),
            "stderr": read_capped(os.path.join(job_dir, "stderr.txt"), options.output_limit),
            "duration_s": round(duration, 3),
            "error": None if finished else abnormal_end(job_dir, user_file, options, outcome),
        }
        return build_result(records, user_file, run)


def abnormal_end(job_dir: str, user_file: str, options: Options, outcome: JobOutcome) -> dict:
    """The error for a job that ended without its `run_end` record."""
    try:
        with open(os.path.join(job_dir, "fault.txt"), encoding="utf-8", errors="replace") as fh:
            fault = fh.read()
    except OSError:
        fault = ""
    lines = user_lines(fault, user_file)  # faulthandler lists the innermost frame first
    line = lines[0] if lines else None
    where = f" while running line {line}" if line else ""
    code = outcome.returncode
    if outcome.killed_for == "timeout":
        kind, message = "Timeout", f"the script ran longer than the {options.timeout:g} s limit{where}"
    elif outcome.killed_for == "memory":
        kind, message = "MemoryLimit", (f"the script used more than the {options.memory_mb} MB "
                                        f"memory limit{where}")
    elif outcome.killed_for == "cancelled":
        kind, message = "Cancelled", "the job was cancelled"
    elif outcome.killed_for == "worker":
        kind, message = "WorkerDied", "the worker process died; it will be restarted"
    elif code is not None and code < 0:
        name = signal.Signals(-code).name
        kind, message = "Crash", f"the worker process crashed with {name}{where}"
    else:
        kind, message = "Exited", (f"the script ended the worker process with exit code {code} "
                                   "(os._exit?) before it finished")
    return {"type": kind, "message": message, "line": line, "traceback": fault[-4000:]}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--standby"]:
        standby_main()
    zygote_main()
