"""Warm workers, the supervisor side: runs in the caller's process and never imports torch.

`Worker` starts one zygote (`zygote.py`) inside the sandbox (`sandbox.py`) and runs one job at a
time on it. Per job it prepares a *slot*: a root-only host folder holding the job's output files
(the job only ever gets their open descriptors), a control socket, and a cgroup (`cgroups.py`).
The zygote forks the job's process into it; the job joins its cgroup before it runs any user
code (the kernel tells us its host PID on the control socket), then isolates itself (`jail.py`).
On a GPU machine the next slot is opened ahead, so its process has initialised CUDA before its job.

The supervisor streams the records, enforces the wall-clock, memory and CPU-time limits by
killing the job's whole cgroup (all its processes), caps the output, and turns every way a job
can end (finished, exception, timeout, a limit, crash, os._exit, cancel) into one result with a
clear `error`.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

from . import cgroups, sandbox
from ..options import Options
from ..report.records import RecordTail, read_records
from ..report.result import build_result
from ..report.stages.common import user_lines

POLL_S = 0.02
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JOBS_ROOT = os.path.join(tempfile.gettempdir(), "torchbolt-jobs")
STARTUP_TIMEOUT_S = 300
MEMORY_ACT_AT = 0.9  # of the limit: stop the job with its traceback before the kernel kills it
OUTPUT_FILES = ("records.jsonl", "stdout.txt", "stderr.txt", "fault.txt")
_serial = iter(range(1, 1 << 62))


class WorkerError(RuntimeError):
    """The worker itself (not the user's script) failed."""


@dataclass
class JobOutcome:
    """What the supervisor observed about how a job ended."""
    returncode: int | None = None
    killed_for: str | None = None  # "timeout", "memory", "cpu", "cancelled", "worker"


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


class Slot:
    """The supervisor's side of one job process."""

    def __init__(self, name: str, sandboxed: bool, group_layout: str | None):
        self.name = name
        self.host_dir = os.path.join(JOBS_ROOT, name)
        os.makedirs(self.host_dir, mode=0o700)
        self.job_dir = sandbox.JOB_DIR if sandboxed else os.path.join(self.host_dir, "job")
        if not sandboxed:
            os.mkdir(self.job_dir)
        self.group = cgroups.JobGroup(name, group_layout) if group_layout else None
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.control.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.their_fds = [theirs.detach()] + [
            os.open(self.path(name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            for name in OUTPUT_FILES]
        self.pid: int | None = None  # the job process's host PID, once it joined
        self.events: "queue.Queue[tuple]" = queue.Queue()
        threading.Thread(target=self._serve_control, daemon=True).start()

    def path(self, file: str) -> str:
        return os.path.join(self.host_dir, file)

    def spec(self, disk_mb: int, sandboxed: bool) -> dict:
        return {"slot": self.name, "sandboxed": sandboxed, "disk_mb": disk_mb,
                "job_dir": self.job_dir}

    def handed_over(self) -> None:
        for fd in self.their_fds:
            os.close(fd)
        self.their_fds = []

    def _serve_control(self) -> None:
        """`join`: put the process in the job's cgroup, then `go`; later `ready`, `started`."""
        try:
            data, ancillary, _, _ = self.control.recvmsg(64, socket.CMSG_SPACE(12))
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                    self.pid = struct.unpack("iII", payload[:12])[0]
            if data != b"join" or self.pid is None:
                return
            if self.group:
                self.group.add(self.pid)
            self.control.send(b"go")
            while message := self.control.recv(64):
                self.events.put((message.decode(),))
        except OSError:
            pass

    def send_job(self, job: dict, source_path: str) -> None:
        fd = os.open(source_path, os.O_RDONLY)
        try:
            socket.send_fds(self.control, [json.dumps(job).encode()], [fd])
        finally:
            os.close(fd)

    def kill(self, dump_traceback: bool, sandboxed: bool) -> None:
        if self.pid is None:
            return
        try:
            if dump_traceback:  # faulthandler writes where the script was, for the message
                os.kill(self.pid, signal.SIGUSR1)
                time.sleep(0.2)
            if sandboxed:  # the job is PID 1 of its namespace: its death ends every process in it
                os.kill(self.pid, signal.SIGKILL)
            else:
                os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.group:
            self.group.kill_all()

    def close(self, sandboxed: bool) -> None:
        self.kill(dump_traceback=False, sandboxed=sandboxed)
        self.handed_over()
        self.control.close()
        if self.group:
            self.group.remove()
        shutil.rmtree(self.host_dir, ignore_errors=True)


def remove_stale_jobs(group_layout: str | None) -> None:
    """Start-up: job folders and cgroups left by servers that died."""
    for name in os.listdir(JOBS_ROOT) if os.path.isdir(JOBS_ROOT) else []:
        if cgroups.is_stale(name):
            path = os.path.join(JOBS_ROOT, name)
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.remove(path)
    if group_layout:
        cgroups.remove_stale(group_layout)


class Worker:
    """One warm zygote; `run` executes one job at a time on it.

    `sandbox`: None runs jobs in the sandbox where `sandbox.check()` says it works (else
    unsandboxed), True requires it (WorkerError when missing), False never uses it."""

    def __init__(self, sandbox: bool | None = None) -> None:
        self.requested_sandbox = sandbox
        self.sandboxed = False
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._slots: dict[str, Slot] = {}
        self._ready = threading.Event()
        self._standby: Slot | None = None
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
        env = {**sandbox.environment(), "TORCHBOLT_PROTOCOL_FD": str(theirs.fileno())}
        command = [sys.executable, "-m", "compiler_core.runtime.zygote"]
        if self.sandboxed:
            command = sandbox.bwrap_command(command, env)
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
        if not self._ready.wait(timeout):
            raise WorkerError(f"the worker did not start within {timeout:.0f} s "
                              f"(log: {self._log_path})")
        return self.warm_s or 0.0

    def close(self) -> None:
        for slot in list(self._slots.values()):
            slot.close(self.sandboxed)
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()  # bwrap's --die-with-parent chain takes the zygote with it
            self._proc.wait()
        if self._sock is not None:
            self._sock.close()
        with contextlib.suppress(OSError):
            os.remove(self._log_path)

    def _read_protocol(self, sock: socket.socket) -> None:
        try:
            while data := sock.recv(1 << 16):
                message = json.loads(data)
                if message.get("ready"):
                    self.warm_s = message["warm_s"]
                    self.fresh_process_per_job = message["fresh_process_per_job"]
                    self._ready.set()
                elif message.get("slot") in self._slots:
                    self._slots[message["slot"]].events.put(("exit", message["exit"]))
        except OSError:
            pass
        self._ready.clear()
        for slot in list(self._slots.values()):  # the zygote died: unblock anyone waiting
            slot.events.put(("zygote_died",))

    def _open_slot(self, disk_mb: int) -> Slot:
        slot = Slot(f"{self._name}-{next(_serial)}", self.sandboxed, self._group_layout)
        self._slots[slot.name] = slot
        socket.send_fds(self._sock, [json.dumps(slot.spec(disk_mb, self.sandboxed)).encode()],
                        slot.their_fds)
        slot.handed_over()
        return slot

    # -- jobs
    def run(self, source: str, options: Options | None = None, user_file: str | None = None,
            on_record=None, cancel: threading.Event | None = None, on_start=None) -> dict:
        """Run a script to its end and return the result; `on_record(record)` streams records.
        `user_file` names the script (its base name is kept); it is never read. `on_start(path)`
        is called when the script starts, with its path as the job sees it (the result's
        `user_file`, which partial results built from the records need)."""
        options = options or Options()
        with self._lock:
            self.start().wait_ready()
            slot, self._standby = self._standby, None
            if slot is None or slot.name not in self._slots:
                slot = self._open_slot(options.disk_mb)
            if self.fresh_process_per_job:  # the next job's process warms up meanwhile
                self._standby = self._open_slot(options.disk_mb)
            try:
                return self._run_in(slot, source, options, user_file,
                                    (on_record, on_start, cancel))
            finally:
                del self._slots[slot.name]
                slot.close(self.sandboxed)

    def _run_in(self, slot: Slot, source, options, user_file, hooks) -> dict:
        inner_file = os.path.join(slot.job_dir, os.path.basename(user_file or "main.py"))
        with open(slot.path("source.py"), "w", encoding="utf-8") as fh:
            fh.write(source)
        if slot.group:
            slot.group.set_limits(options.memory_mb << 20, options.pids)
        outcome = JobOutcome()
        started = self._supervise(slot, options, hooks, outcome,
                                  {"user_file": inner_file, "options": options.to_dict()})
        slot.kill(dump_traceback=False, sandboxed=self.sandboxed)  # anything left running
        return self._result(slot, inner_file, options, outcome,
                            time.monotonic() - (started or time.monotonic()))

    def _supervise(self, slot, options, hooks, outcome, job) -> float | None:
        on_record, on_start, cancel = hooks
        tail = RecordTail(slot.path("records.jsonl"))
        waiting_since, started = time.monotonic(), None
        while True:
            while not slot.events.empty():
                event = slot.events.get()
                if event[0] == "ready":
                    slot.send_job(job, slot.path("source.py"))
                elif event[0] == "started":
                    started = time.monotonic()
                    if on_start:
                        on_start(job["user_file"])
                elif event[0] == "exit":
                    outcome.returncode = event[1]
                elif event[0] == "zygote_died":
                    outcome.killed_for = outcome.killed_for or "worker"
                    return started
            for record in tail.new_records():
                if on_record:
                    on_record(record)
            if outcome.returncode is not None:
                return started
            if outcome.killed_for is None:
                reason = self._limit_hit(slot, options, cancel, started, waiting_since)
                if reason:
                    outcome.killed_for = reason
                    slot.kill(dump_traceback=reason not in ("cancelled", "worker"),
                              sandboxed=self.sandboxed)
                    if slot.pid is None:
                        return started
            time.sleep(POLL_S)

    @staticmethod
    def _limit_hit(slot, options, cancel, started, waiting_since) -> str | None:
        if cancel is not None and cancel.is_set():
            return "cancelled"
        if started is None:
            return "worker" if time.monotonic() - waiting_since > STARTUP_TIMEOUT_S else None
        if time.monotonic() - started > options.timeout:
            return "timeout"
        if slot.group:
            used_mb = slot.group.memory_bytes() / 2**20
            if used_mb > MEMORY_ACT_AT * options.memory_mb or slot.group.oom_killed():
                return "memory"
            if slot.group.cpu_seconds() > options.cpu_s:
                return "cpu"
        elif slot.pid is not None and _rss_mb(slot.pid) > options.memory_mb:
            return "memory"
        return None

    def _result(self, slot, user_file, options, outcome, duration) -> dict:
        records = read_records(slot.path("records.jsonl"))
        finished = any(r["name"] == "run_end" for r in records)
        if slot.group and slot.group.oom_killed():
            outcome.killed_for = "memory"
        run = {
            "options": options.to_dict(),
            "stdout": read_capped(slot.path("stdout.txt"), options.output_limit),
            "stderr": read_capped(slot.path("stderr.txt"), options.output_limit),
            "duration_s": round(duration, 3),
            "error": None if finished else abnormal_end(slot, user_file, options, outcome),
        }
        result = build_result(records, user_file, run)
        if result["error"] and slot.group and slot.group.pids_refused():
            result["error"].update(type="ProcessLimit", message=(
                f"the script tried to run more than {options.pids} processes and threads at "
                f"once (the job's limit): {result['error']['message']}"))
        return result


def abnormal_end(slot: Slot, user_file: str, options: Options, outcome: JobOutcome) -> dict:
    """The error for a job that ended without its `run_end` record."""
    fault = read_capped(slot.path("fault.txt"), 1 << 20)
    lines = user_lines(fault, user_file)  # faulthandler lists the innermost frame first
    line = lines[0] if lines else None
    where = f" while running line {line}" if line else ""
    code = outcome.returncode
    if outcome.killed_for == "timeout":
        kind, message = "Timeout", f"the script ran longer than the {options.timeout:g} s limit{where}"
    elif outcome.killed_for == "memory":
        kind, message = "MemoryLimit", (f"the script used more than the {options.memory_mb} MB "
                                        f"memory limit (all its processes together){where}")
    elif outcome.killed_for == "cpu":
        kind, message = "CpuLimit", (f"the script used more than the {options.cpu_s:g} s "
                                     f"CPU-time limit (all its processes together){where}")
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
