"""The sandbox every job runs in: bubblewrap for the warm zygote, kernel namespaces per job.

Caller side (never imports torch). The zygote starts under `bwrap` as the unprivileged `nobody`
(uid 65534, on the host too when the server runs as root) in its own PID, network, IPC
and UTS namespaces, with an environment built from an allow-list. Its file system is a fresh
tmpfs root with only these mounted, read-only: the system directories, the Python installation
and its site-packages, and the engine package itself (`/opt/torchbolt/compiler_core`). The data
dir, the rest of the project, job folders and anything else of the server are not mounted at all.
Each job then forks from the zygote into namespaces of its own (`jail.py`): a PID namespace whose
init is the job (so nothing the job starts outlives it), a mount namespace with a private,
size-limited tmpfs for its folder, `/tmp` and `/dev/shm`, a private read-only `/dev` and an empty
`/sys/fs/cgroup`, a cgroup namespace, and no network at all. The zygote's own `/dev` is
read-only too.

`check()` probes once whether this kernel and machine can do all that, and says why not.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import importlib.util
import json
import os
import secrets
import shutil
import site
import stat
import subprocess
import sys
from dataclasses import dataclass

from . import cgroups

NOBODY = 65534
ENGINE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENGINE_MOUNT = "/opt/torchbolt"
JOB_DIR = "/job"  # the job's own tmpfs, mounted per job by jail.py
CACHE_MOUNT = "/opt/torchbolt-cache"  # where jobs see their script's build cache (buildcache.py)
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/sys")
TOOLS = ("cc", "c++", "gcc", "g++", "bwrap")
PASSED_ENV = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "CUDA_HOME",
              "TRITON_PTXAS_PATH", "TORCHBOLT_FRESH_PROCESS")


@dataclass(frozen=True)
class SandboxCheck:
    ok: bool
    reason: str  # why not, or what the sandbox is made of
    cgroups: str | None  # "v1", "v2" or None (limits then fall back, see `cgroups.why_not`)


def _own_python_dirs() -> list[str]:
    """Where this interpreter and its packages live (a venv or conda prefix included)."""
    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix, *site.getsitepackages()}
    for name in ("torch", "triton"):
        spec = importlib.util.find_spec(name)  # finds without importing
        if spec and spec.origin:
            dirs.add(os.path.dirname(os.path.dirname(spec.origin)))
    return sorted(d for d in dirs if os.path.isdir(d))


@functools.lru_cache(maxsize=None)
def _python_dirs(python: str | None = None) -> list[str]:
    """The same for `python` (another environment's interpreter, asked once; None: this one)."""
    if python is None or python == sys.executable:
        return _own_python_dirs()
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); from compiler_core.supervisor."
            "sandbox import _own_python_dirs as dirs; print(json.dumps(dirs()))")
    return json.loads(subprocess.run([python, "-c", code, os.path.dirname(ENGINE_DIR)],
                                     capture_output=True, text=True, check=True,
                                     timeout=60).stdout)


def _under_system_dirs(path: str) -> bool:
    return any(path == d or path.startswith(d + "/") for d in SYSTEM_DIRS)


def _tool_bins() -> list[str]:
    """Folders of the tools jobs run, found on the server's PATH: the C/C++ compiler (Inductor's
    CPU kernels, Triton's launcher) and bwrap itself; the H200 machine has gcc in /opt/gcc/bin."""
    found = (shutil.which(tool) for tool in TOOLS)
    return list(dict.fromkeys(os.path.dirname(os.path.realpath(p)) for p in found if p))


def _tool_dirs() -> list[str]:
    """What to mount for tools outside the system folders: `X/bin/gcc` mounts X."""
    return sorted({os.path.dirname(d) if os.path.basename(d) == "bin" else d
                   for d in _tool_bins() if not _under_system_dirs(d)})


def _parents_to_open(paths: list[str]) -> list[str]:
    """Folders above the mounts that bwrap would otherwise create with the host's mode."""
    parents = set()
    for path in paths:
        parent = os.path.dirname(path)
        while parent != "/" and not _under_system_dirs(parent):
            parents.add(parent)
            parent = os.path.dirname(parent)
    return sorted(parents)


def environment(python: str | None = None) -> dict[str, str]:
    """The job's whole environment: fixed values plus a short pass-through list, nothing else."""
    path = [*_tool_bins(), os.path.dirname(python or sys.executable), "/usr/local/bin",
            "/usr/bin", "/bin"]
    env = {"PATH": os.pathsep.join(dict.fromkeys(path)), "HOME": JOB_DIR, "TMPDIR": "/tmp",
           "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1",
           "PYTORCH_NVML_BASED_CUDA_CHECK": "1", "USER": "nobody", "LOGNAME": "nobody"}
    env.update({k: os.environ[k] for k in PASSED_ENV if k in os.environ})
    return env


def _gpu_devices() -> list[str]:
    """NVIDIA's device files, in both layers (CUDA ran inside this on the H200)."""
    return [arg for device in sorted(glob.glob("/dev/nvidia*"))
            for arg in ("--dev-bind-try", device, device)]


def _under_tmp(path: str) -> bool:
    return path.startswith("/tmp/")


def tmp_mounts(python: str | None = None) -> list[str]:
    """The read-only mounts that live under /tmp (a checkout's venv there, say): the job's
    private /tmp would hide them, so each layer that covers /tmp mounts them again after it."""
    paths = sorted(p for p in (*_python_dirs(python), *_tool_dirs()) if _under_tmp(p))
    return [p for p in paths if not any(p.startswith(q + "/") for q in paths)]  # topmost only


def _view_args(writable: tuple[tuple[str, str], ...] = (), python: str | None = None) -> list[str]:
    """The file system jobs see: an allow-list of read-only mounts on a fresh tmpfs root, and
    the `writable` (host folder, where jobs see it) pairs read-write (the CLI's build cache)."""
    mounts = [*_python_dirs(python), *_tool_dirs()]
    args = ["--clearenv", "--dev", "/dev", *_gpu_devices(), "--dir", "/tmp", "--dir", JOB_DIR]
    inside = [dest for _, dest in writable]
    for parent in _parents_to_open([*mounts, *inside, f"{ENGINE_MOUNT}/compiler_core"]):
        args += ["--perms", "0755", "--dir", parent]  # e.g. /root, so `nobody` can pass
    for path in (*SYSTEM_DIRS, *mounts):
        args += ["--ro-bind-try", path, path]
    return args + ["--ro-bind", ENGINE_DIR, f"{ENGINE_MOUNT}/compiler_core",
                   *(arg for pair in writable for arg in ("--bind", *pair))]


def _namespace_args(env: dict[str, str], writable: tuple[tuple[str, str], ...],
                    outer_view: bool, python: str | None = None) -> list[str]:
    """The zygote's namespaces and its private /tmp, with what lives under /tmp bound again
    over it: `tmp_mounts`, and the writable pairs shown there (the CLI's kept header). With
    `outer_view` (the root case) their source is where the outer bwrap mounted them."""
    args = ["--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--hostname", "torchbolt", "--uid", str(NOBODY), "--gid", str(NOBODY),
            "--die-with-parent", "--new-session", "--clearenv", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", "--chdir", "/tmp", *_gpu_devices(),
            "--remount-ro", "/dev"]  # each job mounts its own /dev over this one (jail.py)
    for path in tmp_mounts(python):
        args += ["--ro-bind", path, path]
    for source, dest in writable:
        if _under_tmp(dest):
            args += ["--bind", dest if outer_view else source, dest]
    for key, value in {**env, "PYTHONPATH": ENGINE_MOUNT}.items():
        args += ["--setenv", key, value]
    return args


def bwrap_command(command: list[str], env: dict[str, str],
                  writable: tuple[tuple[str, str], ...] = (),
                  python: str | None = None) -> list[str]:
    """The zygote's sandbox: bwrap in a user namespace of its own (as on any machine with
    unprivileged user namespaces) over the allow-listed file system.

    As root (the dev, CI and GPU machines), two layers: Python may live under /root, which
    `nobody` can't enter, so an outer bwrap builds the allow-listed view as root, with the host's
    /proc under it (a job's own /proc mount needs one fully visible /proc in its namespace, and
    bwrap's own /proc, as root, has covered subfolders), keeps only CAP_SETUID/CAP_SETGID, and
    `setpriv` drops to uid 65534 with no capabilities before the inner bwrap starts. The inner
    one covers /proc with its own, so no job ever sees the host's. `python`: the interpreter
    `command` runs when not this one (its folders are mounted instead)."""
    bwrap = shutil.which("bwrap") or "bwrap"
    if os.getuid() != 0:
        return [bwrap, *_view_args(writable, python),
                *_namespace_args(env, writable, False, python), *command]
    outer = [bwrap, "--die-with-parent", *_view_args(writable, python), "--bind", "/proc", "/proc",
             "--cap-add", "CAP_SETUID,CAP_SETGID", "--", shutil.which("setpriv") or "setpriv",
             f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all",
             "--bounding-set=-all"]
    inner_binds = [arg for _, dest in writable if not _under_tmp(dest)
                   for arg in ("--bind", dest, dest)]
    return [*outer, bwrap, "--ro-bind", "/", "/", *inner_binds,
            *_namespace_args(env, writable, True, python), *command]


def jobs_uid(sandboxed: bool) -> int:
    """Who owns what jobs write on the host: `nobody` for a root server's sandboxed jobs, else
    this process's user (a user namespace maps it)."""
    return NOBODY if sandboxed and os.getuid() == 0 else os.getuid()


def prepare_cache_dir(path: str, sandboxed: bool) -> str:
    """A folder jobs write (the CLI's build cache of one script), handed to the jobs' user
    once, when it is made: never walked or chowned entry by entry as root, which would follow
    the links a job put there. One of another owner is removed whole and made afresh."""
    return own_folder(path, jobs_uid(sandboxed))


def own_folder(path: str, uid: int) -> str:
    """`path`, a folder (not a link) of `uid`, mode 0700, in a parent only this user writes;
    anything else there is moved aside and removed first."""
    with contextlib.suppress(FileNotFoundError):
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == uid:
            return path
        remove_aside(path)
    os.mkdir(path, 0o700)
    if uid != os.getuid():
        os.lchown(path, uid, uid)  # the new, empty folder only
    return path


def remove_aside(path: str) -> None:
    """Rename `path` to a fresh name, then remove it without following links (rmtree's
    descriptor walk): a job still writing into it adds nothing where the next run looks."""
    aside = f"{path}.removed-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(os.lstat(aside).st_mode):
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.unlink(aside)


@functools.lru_cache(maxsize=1)
def check() -> SandboxCheck:
    """Can jobs be sandboxed here? Runs the zygote's own bwrap set-up once with `jail.probe`,
    which sets up a job's nested namespaces and mounts inside it, as each job's fork will."""
    group_layout = cgroups.layout()
    if not shutil.which("bwrap"):
        return SandboxCheck(False, "bubblewrap (bwrap) is not installed: apt-get install "
                                   "bubblewrap", group_layout)
    kernel = _probe([shutil.which("true") or "/bin/true"])
    if kernel is not None:
        return SandboxCheck(False, "this kernel does not let bubblewrap create the user, PID "
                                   f"and network namespaces jobs need: {kernel}", group_layout)
    jobs = _probe([sys.executable, "-c", "import sys; sys.path.insert(0, '/opt/torchbolt'); "
                   "from compiler_core.runtime import jail; jail.probe()"])
    if jobs is not None and "execvp" in jobs:
        return SandboxCheck(False, f"the sandbox cannot reach this Python interpreter, "
                                   f"{sys.executable}: {jobs} (uid {NOBODY} must be able to enter "
                                   f"its folders; mounted: {', '.join(_python_dirs())} and the "
                                   "system folders)", group_layout)
    if jobs is not None:
        return SandboxCheck(False, f"a job's nested namespaces and mounts fail inside "
                                   f"bubblewrap: {jobs}", group_layout)
    limits = (f"cgroup {group_layout} limits" if group_layout else
              f"no cgroup limits ({cgroups.why_not()})")
    return SandboxCheck(True, f"bubblewrap {_bwrap_version()}, uid {NOBODY}, own PID, mount and "
                              f"network namespaces per job, {limits}", group_layout)


def _probe(command: list[str]) -> str | None:
    """None when `command` ran to a zero exit in the zygote's sandbox, else what went wrong."""
    try:
        done = subprocess.run(bwrap_command(command, environment()),
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not start: {exc}"
    if done.returncode == 0:
        return None
    return (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]


def _bwrap_version() -> str:
    try:
        return subprocess.run(["bwrap", "--version"], capture_output=True, text=True,
                              timeout=5).stdout.split()[-1]
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return "?"
