"""A server stopped mid-job (SIGTERM) or killed (SIGKILL) leaves nothing of the job behind: the real
`python -m app` in a subprocess, an endless job in its sandbox, then no process of it after 5 s.

A killed root server's jobs end only when the zygote sees its socket close and exits (the outer
bwrap can't signal the inner one, which setpriv moved to uid 65534); the zygote used to go through
Python's shutdown first: 1.8 s of CPU with torch loaded, so the job outlived the server by 1.8 s
on a quiet machine, 3-4 s at load 10 and past the 5 s below at load 13-18. That CPU is checked
itself, whatever the load (it is 0.03 s now)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENDLESS = "import os, time\nif os.fork() == 0:\n    os.setsid()\nwhile True:\n    time.sleep(0.05)\n"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def processes_in_groups_of(server_pid: int) -> list[int]:
    """Host processes in any torchbolt cgroup of this server (job groups are named after it)."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/cgroup") as fh:
                groups = fh.read()
        except OSError:
            continue
        if f"/torchbolt/{server_pid}-" in groups:
            found.append(int(name))
    return found


def zygote_of(server_pid: int) -> int:
    """The server's zygote: the outermost process running the zygote module (the job processes
    are its forks; bwrap's command lines name the module too, after other words)."""
    argv, parent = {}, {}
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                argv[int(name)] = fh.read().split(b"\0")[1:3]
            with open(f"/proc/{name}/stat") as fh:
                parent[int(name)] = int(fh.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
    zygote = [b"-m", b"compiler_core.runtime.zygote"]
    found = [pid for pid in argv if argv[pid] == zygote and argv.get(parent[pid]) != zygote]
    return next(pid for pid in found if server_pid in ancestors(pid, parent))


def ancestors(pid: int, parent: dict[int, int]) -> list[int]:
    chain = []
    while pid in parent:  # up to PID 1, whose parent is 0
        pid = parent[pid]
        chain.append(pid)
    return chain


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU seconds of `pid` so far (a zombie's are its last); None once gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def call(url: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode() if body else None,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """One store for both servers: the second finds the first lesson's result stored there and
    runs no warm-up lesson before the test's job."""
    return tmp_path_factory.mktemp("store")


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_server_leaves_no_job_behind(data_dir, how):
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "app", "--port", str(port), "--data-dir",
                               str(data_dir)], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        for line in server.stdout:
            if "serving on" in line:
                break
        base = f"http://127.0.0.1:{port}"
        endless = f"{ENDLESS}# {how.name}\n"  # its own run, never one the other server stored
        job = call(f"{base}/api/compile", {"source": endless, "options": {"timeout": 60}})
        # The script forks a setsid() child: 2 processes once it runs (after the server's
        # warm-up run of the first lesson, which may hold the worker first).
        deadline = time.monotonic() + 60
        while (call(f"{base}/api/jobs/{job['handle']}")["status"] != "running"
               and time.monotonic() < deadline):
            time.sleep(0.1)
        while len(processes_in_groups_of(server.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(processes_in_groups_of(server.pid)) >= 2, \
            call(f"{base}/api/jobs/{job['handle']}")
        zygote = zygote_of(server.pid)
        zygote_cpu = [cpu_seconds(zygote)]
        server.send_signal(how)
        server.wait(timeout=10)
        deadline = time.monotonic() + 5
        while ((processes_in_groups_of(server.pid) or zygote_cpu[-1] is not None)
               and time.monotonic() < deadline):
            time.sleep(0.1)
            zygote_cpu.append(cpu_seconds(zygote))
        assert processes_in_groups_of(server.pid) == []
        spent = max(c for c in zygote_cpu if c is not None) - zygote_cpu[0]
        assert spent < 0.5, f"the zygote spent {spent:.2f} s of CPU ending while its job waited"
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
