"""A job process, the supervisor's side of it, and the folder layout of job files.

Per job a root-only host folder under `JOBS_ROOT` holds the job's output files (the job only ever
gets their open descriptors), with a control socket to the job's process and its cgroup.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import socket
import struct
import tempfile
import threading
import time

from . import cgroups, sandbox

JOBS_ROOT = os.path.join(tempfile.gettempdir(), "torchbolt-jobs")
OUTPUT_FILES = ("records.jsonl", "stdout.txt", "stderr.txt", "fault.txt")


def open_lock(path: str) -> int:
    """A descriptor of a timing lock file for a job process to flock (each open is its own
    lock holder); created if missing."""
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)


class JobProcess:
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
        self.warm = threading.Event()  # the process said `ready`: warmed up, waiting for a job
        threading.Thread(target=self._serve_control, daemon=True).start()

    def path(self, file: str) -> str:
        return os.path.join(self.host_dir, file)

    def spec(self, disk_mb: int, sandboxed: bool, python: str | None = None) -> dict:
        """`python`: the zygote's interpreter when it is another environment's; the job mounts
        again what the zygote's sandbox mounted under /tmp for it (not the server's Python,
        which that sandbox does not hold: a job there failed to open it and never started)."""
        return {"process": self.name, "sandboxed": sandboxed, "disk_mb": disk_mb,
                "job_dir": self.job_dir,
                "tmp_mounts": sandbox.tmp_mounts(python) if sandboxed else []}

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
                if message == b"ready":
                    self.warm.set()
                self.events.put((message.decode(),))
        except OSError:
            pass

    def send_job(self, job: dict, source_path: str, timing_lock: str | None) -> None:
        """The job, its source as an open file and, with `timing_lock`, that lock file open: the
        sandboxed job locks the descriptor (flock) around its timings, with no path to open."""
        fds = [os.open(source_path, os.O_RDONLY)]
        if timing_lock:
            fds.append(open_lock(timing_lock))
        try:
            socket.send_fds(self.control, [json.dumps({**job, "timing_lock": bool(timing_lock)})
                                           .encode()], fds)
        finally:
            for fd in fds:
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
