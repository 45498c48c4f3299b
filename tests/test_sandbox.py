"""A hostile corpus: each script attacks the host, the server or other jobs; each test asserts the
outcome from outside (error type and line, no canary leaked, data and code unchanged, nothing of
the job left running, the worker still serving). Runs on the shared warm worker, in the sandbox."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import time

import pytest

from compiler_core import Options, sandbox_check

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CANARY = os.environ["TORCHBOLT_TEST_CANARY"]  # set in conftest.py before any worker starts
SERVER_PID = os.getpid()
OK = "import torch\nprint(torch.compile(lambda x: x + 1)(torch.ones(1)))\n"



def test_the_sandbox_is_available_here():
    """The set-up script installs bubblewrap; a machine that can't sandbox must not pass CI."""
    check = sandbox_check()
    assert check.ok, check.reason
    assert check.cgroups in ("v1", "v2"), "job limits need a writable cgroup hierarchy (root)"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """A stand-in for the server's data dir, holding a canary."""
    path = tmp_path_factory.mktemp("data")
    (path / "results.sqlite3").write_text(CANARY)
    return str(path)


def engine_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted(glob.glob(os.path.join(ROOT, "compiler_core", "**", "*.py"),
                                 recursive=True)):
        with open(path, "rb") as fh:
            digest.update(fh.read())
    return digest.hexdigest()


def descendants(root: int) -> set[int]:
    """Every process below `root` (the worker's sandbox): its idle zygote tree plus any job's."""
    children: dict[int, list[int]] = {}
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def standby_processes(worker) -> set[int]:
    """On a GPU machine the next jobs' processes (and their namespaces' first processes) are
    started ahead, during this job: not leftovers."""
    pids = {pid for slot in worker._standbys if slot.group for pid in slot.group.pids()}
    for pid in list(pids):
        with open(f"/proc/{pid}/stat") as fh:
            pids.add(int(fh.read().rsplit(")", 1)[1].split()[1]))
    return pids


# name: (script, expected error type, expected line or None, options)
CASES = {
    "read_data_dir": ("print(open('{data}/results.sqlite3').read())\n",
                      "FileNotFoundError", 1, {}),
    "list_data_dir": ("import os\nprint(os.listdir('{data}'))\n", "FileNotFoundError", 2, {}),
    "rewrite_stored_result": ("open('{data}/results.sqlite3', 'w').write('pwned')\n",
                              "FileNotFoundError", 1, {}),
    "append_to_project_code": ("open('{root}/compiler_core/runtime/runner.py', 'a').write('x=1')\n",
                               "FileNotFoundError", 1, {}),
    "append_to_mounted_engine": ("import compiler_core.runtime.runner as r\n"
                                 "open(r.__file__, 'a').write('x = 1\\n')\n", "PermissionError",
                                 2, {}),
    "write_system_dirs": ("for p in ('/usr/evil', '/etc/evil', '/evil'):\n"
                          "    try:\n        open(p, 'w')\n    except OSError:\n        pass\n"
                          "    else:\n        raise SystemExit(p)\n"
                          "open('/usr/lib/evil', 'w')\n", "OSError", 8, {}),
    "read_shadow": ("print(open('/etc/shadow').read())\n", "PermissionError", 1, {}),
    "print_environment": ("import os\nprint(dict(os.environ))\nraise KeyError('done')\n",
                          "KeyError", 3, {}),
    "read_every_proc_environ": ("import glob\nfor p in glob.glob('/proc/*/environ'):\n"
                                "    print(p, open(p, 'rb').read())\n"
                                "raise KeyError('done')\n", "KeyError", 4, {}),
    "call_the_server_api": ("import socket\nsocket.create_connection(('127.0.0.1', 8000), 2)\n",
                            "OSError", 2, {}),
    "reach_the_internet": ("import socket\nsocket.create_connection(('1.1.1.1', 53), 2)\n",
                           "OSError", 2, {}),
    "kill_the_server": (f"import os, signal\nos.kill({SERVER_PID}, signal.SIGKILL)\n",
                        "ProcessLookupError", 2, {}),
    "kill_every_visible_pid": ("import os, signal\nseen = sorted(int(p) for p in os.listdir('/proc')"
                               " if p.isdigit())\nprint(seen)\nfor pid in seen:\n"
                               "    os.kill(pid, signal.SIGKILL)\nraise KeyError(seen)\n",
                               "KeyError", 6, {}),
    "setsid_child_left_running": ("import os, time\nif os.fork() == 0:\n    os.setsid()\n"
                                  "    time.sleep(300)\nraise KeyError('parent done')\n",
                                  "KeyError", 5, {}),
    "double_fork_daemon": ("import os, time\nif os.fork() == 0:\n    if os.fork() == 0:\n"
                           "        os.setsid()\n        time.sleep(300)\n    os._exit(0)\n"
                           "os.wait()\nraise KeyError('parent done')\n", "KeyError", 8, {}),
    "thread_outlives_script": ("import threading, time\nthreading.Thread(target=time.sleep, "
                               "args=(300,)).start()\nraise KeyError('main done')\n",
                               "KeyError", 3, {}),
    "ignore_sigterm_and_sigusr1": ("import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                                   "signal.signal(signal.SIGUSR1, signal.SIG_IGN)\n"
                                   "while True: pass\n", "Timeout", 4, {"timeout": 3}),
    "fork_bomb": ("import os\nwhile True:\n    os.fork()\n", "ProcessLimit", 3,
                  {"timeout": 20, "pids": 64}),
    "thread_bomb": ("import threading, time\nwhile True:\n    threading.Thread(target=time.sleep,"
                    " args=(60,)).start()\n", "ProcessLimit", 3, {"timeout": 20, "pids": 64}),
    "memory_bomb_in_children": ("import os, time\nfor _ in range(4):\n    if os.fork() == 0:\n"
                                "        block = bytearray(400 << 20)\n"
                                "        time.sleep(60)\n"
                                "while True:\n    time.sleep(0.01)\n", "MemoryLimit", 7,
                                {"timeout": 30, "memory_mb": 1000}),
    "disk_fill_many_files": ("import os\nfor i in range(100):\n"
                             "    with open(f'/tmp/fill{i}', 'wb') as fh:\n"
                             "        fh.write(os.urandom(63 << 20))\n", "DiskLimit", 4,
                             {"disk_mb": 200, "timeout": 30}),
    "cpu_burn_in_children": ("import os\nfor _ in range(2):\n    if os.fork() == 0:\n"
                             "        while True:\n            pass\nwhile True:\n"
                             "    os.sched_yield()\n", "CpuLimit", None,
                             {"cpu_s": 3, "timeout": 30}),
    "unmount_the_private_tmp": ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                                "if libc.umount2(b'/tmp', 2) != 0:\n"
                                "    raise PermissionError(ctypes.get_errno(), 'umount refused')\n",
                                "PermissionError", 4, {}),
    "become_root": ("import os\nos.setuid(0)\n", "OSError", 2, {}),  # uid 0 isn't mapped
    "raise_own_cgroup_limit": ("import glob\nfor path in glob.glob('/sys/fs/cgroup/*/torchbolt/*/"
                               "memory.limit_in_bytes') + glob.glob('/sys/fs/cgroup/torchbolt/*/"
                               "memory.max'):\n    open(path, 'w').write('max')\n"
                               "raise KeyError('no cgroup file was writable')\n", None, None, {}),
    "deep_recursion": ("def down(n):\n    return down(n + 1)\n\ndown(0)\n", "RecursionError", 2,
                       {"timeout": 30}),
}


@pytest.mark.parametrize("name", CASES)
def test_hostile_script(worker, data_dir, name):
    source, kind, line, options = CASES[name]
    source = source.replace("{data}", data_dir).replace("{root}", ROOT)
    code_before, idle = engine_digest(), descendants(worker._proc.pid)
    started = time.monotonic()
    result = worker.run(source, Options(device="cpu", measure=False, **{"timeout": 10, **options}))
    elapsed = time.monotonic() - started
    error = result["error"]
    if kind is None:  # either outcome is safe as long as nothing was written
        assert error is not None and error["type"] in ("OSError", "KeyError"), error
    else:
        assert error is not None and error["type"] == kind, error
        if line is not None:
            assert error["line"] == line, error
    assert CANARY not in json.dumps(result)
    assert engine_digest() == code_before
    with open(os.path.join(data_dir, "results.sqlite3")) as fh:
        assert fh.read() == CANARY
    deadline = time.monotonic() + 5
    while ((left := descendants(worker._proc.pid) - idle - standby_processes(worker))
           and time.monotonic() < deadline):
        time.sleep(0.05)
    assert not left, f"processes of the job still running: {sorted(left)}"
    if name == "deep_recursion":
        assert elapsed < 5, f"recursion took {elapsed:.1f} s"
    assert worker.run(OK, Options(device="cpu", measure=False))["stdout"] == "tensor([2.])\n"


def test_jobs_see_only_their_own_processes_and_files(worker):
    """PID 1 of its own namespace, uid 65534, and nothing left by the job before it."""
    writer = ("import os\nfor d in ('/tmp', '/dev/shm', '/job'):\n"
              "    open(os.path.join(d, 'left-behind'), 'w').write('x')\n")
    reader = ("import os, json\nprint(json.dumps({'pids': [p for p in os.listdir('/proc') if "
              "p.isdigit()], 'uid': os.getuid(), 'files': sorted(os.listdir('/tmp') + "
              "os.listdir('/dev/shm') + os.listdir('/job'))}))\n")
    worker.run(writer, Options(device="cpu", measure=False))
    seen = json.loads(worker.run(reader, Options(device="cpu", measure=False))["stdout"])
    assert seen["pids"] == ["1"] and seen["uid"] == 65534
    assert "left-behind" not in seen["files"]


def test_the_job_environment_is_an_allow_list(worker):
    result = worker.run("import os, json\nprint(json.dumps(sorted(os.environ)))\n",
                        Options(device="cpu", measure=False))
    names = set(json.loads(result["stdout"]))
    assert "TORCHBOLT_TEST_CANARY" not in names
    assert names <= {"PATH", "HOME", "TMPDIR", "LANG", "PYTHONUNBUFFERED", "USER", "LOGNAME",
                     "PYTHONDONTWRITEBYTECODE", "PYTORCH_NVML_BASED_CUDA_CHECK", "PYTHONPATH",
                     "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "CUDA_VISIBLE_DEVICES",
                     "LD_LIBRARY_PATH", "TORCHBOLT_FRESH_PROCESS", "NVIDIA_VISIBLE_DEVICES",
                     "CUDA_HOME", "TRITON_PTXAS_PATH"} | {
                         n for n in names if n.startswith(("OMP_", "KMP_", "TORCH", "_TORCH"))} | {"PWD"}


# Job 1 of the shared-/dev attack (found by a red team): each step must fail with an OSError.
DEV_ATTACKER = r'''
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)

def swap_stdout():  # the next job's `print(secret, file=open('/dev/stdout', 'w'))` lands here
    os.unlink('/dev/stdout')
    os.symlink('/dev/loot', '/dev/stdout')

def big_file():  # stored outside the disk limit, and after the job ended
    with open('/dev/big', 'wb') as fh:
        fh.write(bytes(200 << 20))

def libc_call(result):
    if result != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))

steps = {
    'swap_stdout': swap_stdout,
    'create_file': lambda: open('/dev/loot', 'w').write('x'),
    'fifo': lambda: os.mkfifo('/dev/hang'),
    'big_file': big_file,
    'remount_dev_rw': lambda: libc_call(libc.mount(None, b'/dev', None, 32, None)),
    'unmount_dev': lambda: libc_call(libc.umount2(b'/dev', 2)),
    'cgroup_file': lambda: open('/sys/fs/cgroup/planted', 'w').write('x'),
    'cgroup_dir': lambda: os.mkdir('/sys/fs/cgroup/planted'),
}
outcome = {}
for name, step in steps.items():
    try:
        step()
        outcome[name] = 'done'
    except OSError as exc:
        outcome[name] = exc.strerror
print(json.dumps(outcome))
'''

# Job 2 on the same worker: a /dev of its own, with what a program needs and nothing of job 1.
DEV_READER = r'''
import json, os
try:  # the victim's write that, on a shared /dev, went to job 1's file
    with open('/dev/stdout', 'a') as out:
        out.write('SECRET via /dev/stdout\n')
    reopened = 'written'
except PermissionError:  # the supervisor's output files are root's, mode 0600
    reopened = 'refused'
mine, linked = os.fstat(1), os.stat('/dev/stdout')
master, _ = os.openpty()
with open('/dev/null', 'w') as fh:
    fh.write('x')
with open('/dev/urandom', 'rb') as fh:
    random_bytes = len(fh.read(16))
print(json.dumps({
    'dev': sorted(os.listdir('/dev')), 'stdout': os.readlink('/dev/stdout'), 'reopened': reopened,
    'own_stdout': (mine.st_dev, mine.st_ino) == (linked.st_dev, linked.st_ino),
    'null': open('/dev/null').read(), 'urandom': random_bytes,
    'zero': open('/dev/zero', 'rb').read(4).hex(), 'pts': sorted(os.listdir('/dev/pts')),
    'shm': os.listdir('/dev/shm'), 'cgroup_dir': os.listdir('/sys/fs/cgroup'),
    'own_cgroup': [line.split(':', 2)[2] for line in open('/proc/self/cgroup').read().split()],
}))
'''
DEV_ENTRIES = {"fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout",
               "tty", "urandom", "zero"}


def test_each_job_has_a_private_read_only_dev_and_no_cgroup_view(worker):
    """Job 1 can't change /dev or /sys/fs/cgroup; job 2 sees the standard /dev, nothing of job 1,
    and neither other jobs' cgroups nor its own group's name (it holds the server's PID)."""
    attack = worker.run(DEV_ATTACKER, Options(device="cpu", measure=False, timeout=30))
    outcome = json.loads(attack["stdout"])
    assert not [name for name, result in outcome.items() if result == "done"], outcome
    result = worker.run(DEV_READER, Options(device="cpu", measure=False))
    seen = json.loads(result["stdout"].splitlines()[-1])
    assert {n for n in seen["dev"] if not n.startswith("nvidia")} == DEV_ENTRIES, seen["dev"]
    assert seen["stdout"] == "/proc/self/fd/1" and seen["own_stdout"], seen
    if seen["reopened"] == "written":  # else refused: nothing written anywhere
        assert result["stdout"].startswith("SECRET via /dev/stdout\n"), result["stdout"]
    assert (seen["null"], seen["urandom"], seen["zero"]) == ("", 16, "00000000")
    assert seen["pts"] == ["0", "ptmx"] and seen["shm"] == []  # its own devpts: one pty, its own
    assert seen["cgroup_dir"] == [] and set(seen["own_cgroup"]) == {"/"}, seen
