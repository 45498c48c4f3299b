"""One control group per job: limits on all of a job's processes together, read and killed as one.

Caller side (never imports torch); needs root, as on the dev, CI and GPU machines. Both layouts
seen there are supported: cgroup v2 (`/sys/fs/cgroup/cgroup.controllers` lists `memory`, the H200
machine) and cgroup v1 with one hierarchy per controller (`/sys/fs/cgroup/{memory,pids,cpuacct}`,
the 2-core CPU machines, whose cgroup2 at `/sys/fs/cgroup/unified` has no controllers).
Groups live under `torchbolt/` and are named `<server pid>-...`, so a new server can remove the
groups of one that died (`remove_stale`).
"""

from __future__ import annotations

import os
import signal
import time

ROOT = "/sys/fs/cgroup"
PARENT = "torchbolt"
V1_CONTROLLERS = ("memory", "pids", "cpuacct")


def _read(path: str) -> str:
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return ""


def _write(path: str, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


def _field(text: str, key: str) -> int:
    """`key value` lines (memory.events, pids.events, cpu.stat, memory.oom_control)."""
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def layout() -> str | None:
    """"v2", "v1", or None when this process can't create groups (then say why: `why_not`)."""
    if "memory" in _read(f"{ROOT}/cgroup.controllers").split():
        parent = f"{ROOT}/{PARENT}"
        base = "v2"
    elif os.path.isdir(f"{ROOT}/memory") and os.path.isdir(f"{ROOT}/pids"):
        parent = f"{ROOT}/memory/{PARENT}"
        base = "v1"
    else:
        return None
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError:
        return None
    return base


def why_not() -> str:
    return ("no writable cgroup hierarchy with memory and pids controllers (needs root); "
            "memory is measured on the job's main process only and processes are not limited")


def _v2_enable(path: str) -> None:
    """Let groups below `path` use the controllers (cgroup v2 delegates them level by level)."""
    wanted = {"memory", "pids", "cpu"} & set(_read(f"{path}/cgroup.controllers").split())
    missing = wanted - set(_read(f"{path}/cgroup.subtree_control").split())
    if missing:
        _write(f"{path}/cgroup.subtree_control", " ".join(f"+{c}" for c in sorted(missing)))


class JobGroup:
    """A job's group: create, add the job's first process, read usage, kill all, remove."""

    def __init__(self, name: str, version: str):
        self.name, self.version = name, version
        if version == "v2":
            _v2_enable(ROOT)
            _v2_enable(f"{ROOT}/{PARENT}")
            self.dirs = {c: f"{ROOT}/{PARENT}/{name}" for c in V1_CONTROLLERS}
        else:
            self.dirs = {c: f"{ROOT}/{c}/{PARENT}/{name}" for c in V1_CONTROLLERS
                         if os.path.isdir(f"{ROOT}/{c}")}
        for path in set(self.dirs.values()):
            os.makedirs(path, exist_ok=True)

    def set_limits(self, memory_bytes: int, pids: int) -> None:
        if self.version == "v2":
            _write(f"{self.dirs['memory']}/memory.max", str(memory_bytes))
            swap = f"{self.dirs['memory']}/memory.swap.max"
            if os.path.exists(swap):  # a job must not escape its limit into swap
                _write(swap, "0")
        else:
            _write(f"{self.dirs['memory']}/memory.limit_in_bytes", str(memory_bytes))
        _write(f"{self.dirs['pids']}/pids.max", str(pids))

    def add(self, pid: int) -> None:
        for path in set(self.dirs.values()):
            _write(f"{path}/cgroup.procs", str(pid))

    def pids(self) -> list[int]:
        return [int(p) for p in _read(f"{self.dirs['pids']}/cgroup.procs").split()]

    def memory_bytes(self) -> int:
        name = "memory.current" if self.version == "v2" else "memory.usage_in_bytes"
        text = _read(f"{self.dirs['memory']}/{name}").strip()
        return int(text) if text.isdigit() else 0

    def oom_killed(self) -> bool:
        """The kernel killed a process of the job at the memory limit."""
        name = "memory.events" if self.version == "v2" else "memory.oom_control"
        return _field(_read(f"{self.dirs['memory']}/{name}"), "oom_kill") > 0

    def pids_refused(self) -> bool:
        """A fork or thread was refused at the process limit."""
        return _field(_read(f"{self.dirs['pids']}/pids.events"), "max") > 0

    def cpu_seconds(self) -> float:
        if self.version == "v2":
            return _field(_read(f"{self.dirs['memory']}/cpu.stat"), "usage_usec") / 1e6
        text = _read(f"{self.dirs.get('cpuacct', '')}/cpuacct.usage").strip()
        return int(text) / 1e9 if text.isdigit() else 0.0

    def kill_all(self, timeout: float = 5.0) -> None:
        """SIGKILL every process in the group, repeating until it is empty (v1 has no
        `cgroup.kill`; a process forking meanwhile is caught by the next pass)."""
        kill_file = f"{self.dirs['pids']}/cgroup.kill"
        deadline = time.monotonic() + timeout
        while (pids := self.pids()) and time.monotonic() < deadline:
            if os.path.exists(kill_file):
                _write(kill_file, "1")
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)

    def remove(self) -> None:
        self.kill_all()
        for path in set(self.dirs.values()):
            for _ in range(50):  # rmdir fails while the last killed task is still exiting
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def is_stale(name: str) -> bool:
    """A name `<server pid>-...` (groups, job folders, logs) whose server is gone."""
    owner = name.split("-", 1)[0]
    if not owner.isdigit() or int(owner) == os.getpid():
        return False
    try:
        os.kill(int(owner), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    return False


def remove_stale(version: str) -> None:
    """Kill and remove the groups of servers that are gone."""
    parent = f"{ROOT}/{PARENT}" if version == "v2" else f"{ROOT}/memory/{PARENT}"
    for name in os.listdir(parent) if os.path.isdir(parent) else []:
        if is_stale(name):
            JobGroup(name, version).remove()
