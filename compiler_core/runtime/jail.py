"""Per-job isolation inside the zygote's bubblewrap sandbox, with the kernel's own calls.

A job must stay warm (forked from the zygote, which has imported torch) and yet be isolated from
the zygote and from every other job, so it cannot be a fresh `bwrap` per job. Instead the forked
child (`enter_namespaces`) unshares a new user, PID, mount, network, IPC and UTS namespace; its
own child, the job, is then PID 1 of that PID namespace (when it exits the kernel kills everything
the job started, `setsid()` or double fork included) and mounts its private file systems, /dev
included, and hides the cgroups (`mount_job_files`) before giving up every capability for good
(`drop_privileges`). Measured on the 2-core CPU machine (kernel 6.18, shared, load 2-3; a small
forked Python, 200 runs): all of it 3.5-5.5 ms (min-median), of which `mount_job_files` 0.9-1.2
ms median (0.4 ms before the private /dev and the cgroup cover).

Python 3.11 has no `os.unshare` or `mount`, hence ctypes on libc. x86-64 Linux only.
"""

from __future__ import annotations

import ctypes
import os
import signal
import stat

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC, MS_PRIVATE = 1024, 2048, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
SYS_CAPSET = 126  # x86-64
CAP_VERSION_3 = 0x20080522

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    encode = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(_libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)),
           f"mount {target}")


def die_with_parent() -> None:
    """SIGKILL this process when its parent dies (the zygote, or the namespaces' first child)."""
    _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "PR_SET_PDEATHSIG")


def enter_namespaces() -> None:
    """New namespaces for this process's children; the same uid and gid map straight through."""
    uid, gid = os.getuid(), os.getgid()
    _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET
                         | CLONE_NEWIPC | CLONE_NEWUTS), "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as fh:
            fh.write(text)


def mount_job_files(job_dir: str, disk_mb: int, tmp_view: str | None = None,
                    tmp_mounts: tuple[str, ...] = ()) -> None:
    """In the job (PID 1 of its namespace), after it joined its cgroup: its own /proc, one tmpfs
    of `disk_mb` for the job folder, /tmp and /dev/shm, so one size limit covers every file it
    writes, a private read-only /dev (`_private_dev`) and no view of the cgroups
    (`_hide_cgroups`). `tmp_view`: a folder of the zygote's /tmp shown in the job's
    (`show_in_tmp`), where Inductor keeps its precompiled headers (zygote.inductor_tmp_view).
    `tmp_mounts`: the zygote's read-only mounts under /tmp (the server's Python in a checkout
    there), bound again inside the job's /tmp, which would hide them."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _mount("tmpfs", job_dir, "tmpfs", MS_NOSUID | MS_NODEV, f"size={disk_mb}m,mode=0700")
    for inner in ("tmp", "shm"):
        os.mkdir(os.path.join(job_dir, inner), 0o700)
    if tmp_view:
        show_in_tmp(job_dir, tmp_view)
    if os.path.isdir("/tmp"):
        handles = [os.open(path, os.O_PATH | os.O_NOFOLLOW) for path in tmp_mounts]
        try:
            _mount(os.path.join(job_dir, "tmp"), "/tmp", None, MS_BIND | MS_REC)
            for path, fd in zip(tmp_mounts, handles):
                os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
                _carry(fd, path)
        finally:
            for fd in handles:
                os.close(fd)
    _private_dev(os.path.join(job_dir, "shm"))
    _hide_cgroups()


def show_in_tmp(job_dir: str, path: str) -> None:
    """The zygote's folder `path` at the same place in the job's /tmp, as an overlay whose
    changes stay in the job's own files: Inductor takes a lock file beside the header even to
    read it, and builds a header of its own for other compile flags, yet what the next job sees
    must stay what the zygote built. A kernel without unprivileged overlays: read-only."""
    view = os.path.join(job_dir, "tmp", os.path.basename(path))
    changes = os.path.join(job_dir, "tmp", ".torchbolt-overlay")
    upper, work = os.path.join(changes, "upper"), os.path.join(changes, "work")
    for folder in (view, changes, upper, work):
        os.mkdir(folder, 0o700)
    try:
        _mount("overlay", view, "overlay", MS_NOSUID | MS_NODEV,
               f"lowerdir={path},upperdir={upper},workdir={work}")
    except OSError:
        _mount(path, view, None, MS_BIND | MS_REC)
        _mount(None, view, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
DEV_LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
             "stderr": "/proc/self/fd/2", "ptmx": "pts/ptmx"}


def _private_dev(shm: str) -> None:
    """A /dev of the job's own: the zygote's /dev is one tmpfs that every job shares (a job could
    swap /dev/stdout for a link to its own file and read the next job's output), so a fresh
    read-only tmpfs covers it, holding only the standard nodes and NVIDIA's (CUDA, where present)
    bound from the zygote's, the /proc/self/fd links, a devpts instance of its own and `shm`."""
    present = os.listdir("/dev")  # not glob: its first pattern compiles in every job, 0.7 ms
    names = [n for n in DEV_NODES if n in present] + sorted(
        n for n in present if n.startswith("nvidia"))
    # O_PATH handles keep the zygote's nodes reachable once the new tmpfs hides them.
    handles = {name: os.open(f"/dev/{name}", os.O_PATH | os.O_NOFOLLOW) for name in names}
    try:
        _mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=16k,mode=0755")
        for name, fd in handles.items():
            _carry(fd, f"/dev/{name}")
    finally:
        for fd in handles.values():
            os.close(fd)
    for name, target in DEV_LINKS.items():
        os.symlink(target, f"/dev/{name}")
    os.mkdir("/dev/pts")
    _mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
           "newinstance,ptmxmode=0666,mode=0620")
    os.mkdir("/dev/shm")
    _mount(shm, "/dev/shm", None, MS_BIND)
    _mount(None, "/dev", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)


def _carry(fd: int, target: str) -> None:
    """Bind the node `fd` holds at `target`: a device file, or a folder (/dev/nvidia-caps) with
    what is mounted in it; a symbolic link is copied as a link."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISLNK(mode):
        os.symlink(os.readlink("", dir_fd=fd), target)
        return
    if stat.S_ISDIR(mode):
        os.mkdir(target)
    else:
        os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o600))
    # Read-only, keeping the flags the zygote's mount locks (statvfs's ST_ bits are the MS_ ones):
    # a device still reads, writes and maps (CUDA's too); nothing in a folder can change.
    kept = os.fstatvfs(fd).f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME)
    _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC)
    _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept)


def _hide_cgroups() -> None:
    """The job's own cgroup namespace (its /proc/self/cgroup reads "/", not the server's PID and
    worker in the group's name) and an empty read-only tmpfs over /sys/fs/cgroup: other jobs'
    groups, their usage and limits. The limits hold: they are set and read from outside."""
    _check(_libc.unshare(CLONE_NEWCGROUP), "unshare cgroup")
    if os.path.isdir("/sys/fs/cgroup"):
        _mount("tmpfs", "/sys/fs/cgroup", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
               "mode=0555")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def drop_privileges() -> None:
    """No capabilities (the new user namespace granted all of them) and no way to regain any: the
    job can't unmount what hides the zygote's files, nor mount anything new."""
    data = (_CapData * 2)()
    _check(_libc.syscall(SYS_CAPSET, ctypes.byref(_CapHeader(CAP_VERSION_3, 0)),
                         ctypes.byref(data)), "capset")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")


def mirror_exit(pid: int) -> None:
    """In the namespaces' first child: wait for the job and end the same way. Never returns."""
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code if code >= 0 else 128 - code)


def probe() -> None:
    """`sandbox.check()` runs this inside bwrap: the nested namespaces and mounts must work."""
    enter_namespaces()
    pid = os.fork()
    if pid == 0:
        mount_job_files("/job", 1)
        drop_privileges()
        os._exit(0 if os.getpid() == 1 else 3)
    mirror_exit(pid)
