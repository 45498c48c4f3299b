"""The CLI's build cache: Inductor's and Triton's kernels kept from run to run, and safely.

A job may change anything it can write, so nothing a job wrote is ever loaded by a run of
another script, and root never follows a link in a folder a job could have changed, nor
changes anything in it but to remove it whole (`ROOT` is `~/.cache/torchbolt/build`):

- `ROOT/scripts/<key>/`: the kernels of one script (key: the hash of its source), the only
  folder its jobs write (at `sandbox.CACHE_MOUNT`). Handed to the jobs' user once, when made
  (`sandbox.prepare_cache_dir`). A run holds `<key>.lock` (flock) for as long as it runs: two
  runs of one script take turns, and pruning passes over it. The `KEEP_SCRIPTS` most recently
  run scripts keep theirs. The folder counts toward the job's disk limit: while the job runs the
  supervisor measures it (`over_limit`, as often as every 20 ms while a walk is cheap) and stops
  the job past the limit (a DiskLimit error: a script writing 512 MB into it at 8 MB a time,
  with a 32 MB limit, is stopped after a few blocks); after the run (its processes gone, the
  lock still held) one larger than the limit is removed whole. Each measure is a descriptor
  walk that follows no link.
- `ROOT/header/`: Inductor's precompiled C++ header (7.6 s to build here), shared by every
  script, so no job writes it: the zygote's own warm-up, which runs no user code, builds it
  when it is missing, and jobs see it through an overlay of their own (`jail.show_in_tmp`).
- `ROOT` and `ROOT/scripts` belong to the invoking user and are never mounted.

Unsandboxed, jobs run as the user anyway: the script's folder is still its own, and Inductor
keeps its header in the user's /tmp, as a plain run does.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import time

from . import sandbox

KEEP_SCRIPTS = 32
MEASURE_COST_SHARE = 0.02  # walking the folder takes at most this share of the run's time
BLOCK_BYTES = 4096  # what each file or folder costs at least, an empty one included
HEADER_MOUNT = "/tmp/torchinductor_nobody"  # the zygote's Inductor folder (its USER is nobody)


def script_key(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:24]


def disk_bytes(folder: str, stop_above: int) -> int:
    """What `folder` holds on disk (each entry at least `BLOCK_BYTES`), counted until past
    `stop_above`; no link is followed (`os.fwalk` opens each folder by descriptor)."""
    total = 0
    for _, dirs, files, dir_fd in os.fwalk(folder, follow_symlinks=False):
        for name in (*dirs, *files):
            with contextlib.suppress(OSError):
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                total += max(st.st_blocks * 512, BLOCK_BYTES)
        if total > stop_above:
            break
    return total


class BuildCache:
    """One run's share of the cache under `root`; `fresh`: build every kernel afresh (no
    script folder at all), the header still kept, as PyTorch's own fresh cache keeps it.
    `disk_mb`: the job's disk limit, which the script's folder counts toward."""

    def __init__(self, root: str, source: str, fresh: bool = False, disk_mb: int = 1024):
        self.root, self.key, self.fresh = os.path.abspath(root), script_key(source), fresh
        self.scripts = os.path.join(self.root, "scripts")
        self.disk_bytes = disk_mb << 20
        self._lock_fd: int | None = None
        self._next_measure = 0.0

    def attach(self, sandboxed: bool) -> tuple[tuple[tuple[str, str], ...], dict[str, str]]:
        """(writable (host folder, where the sandbox sees it) pairs, environment) of this run;
        holds the script's lock until `release`."""
        os.makedirs(os.path.dirname(self.root), exist_ok=True)
        for folder in (self.root, self.scripts):
            sandbox.own_folder(folder, os.getuid())
        writable, env = [], {}
        if sandboxed:
            header = sandbox.prepare_cache_dir(os.path.join(self.root, "header"), True)
            writable.append((header, HEADER_MOUNT))
            env["TORCHBOLT_KEPT_HEADER"] = HEADER_MOUNT
        if not self.fresh:
            if self._lock_fd is None:  # a restarted zygote keeps the run's lock
                self._lock_fd = self._hold(os.path.join(self.scripts, f"{self.key}.lock"))
            folder = sandbox.prepare_cache_dir(os.path.join(self.scripts, self.key), sandboxed)
            inside = sandbox.CACHE_MOUNT if sandboxed else folder
            writable.append((folder, inside))
            env["TORCHBOLT_BUILD_CACHE"] = inside
        return tuple(writable), env

    @staticmethod
    def _hold(path: str) -> int:
        """The script's lock, held: waits for another run of it; a lock file pruned meanwhile
        (unlinked) is made again."""
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.fstat(fd).st_nlink:
                os.utime(fd)  # when this script last ran, for pruning
                return fd
            os.close(fd)

    def over_limit(self) -> bool:
        """Whether the script's folder holds more than the job's disk limit now; called as
        the job runs, it walks the folder only when the last walk's cost allows
        (`MEASURE_COST_SHARE`), so a folder of many small files costs the supervisor little."""
        now = time.monotonic()
        if self._lock_fd is None or now < self._next_measure:
            return False
        over = disk_bytes(os.path.join(self.scripts, self.key), self.disk_bytes) > self.disk_bytes
        self._next_measure = now + (time.monotonic() - now) / MEASURE_COST_SHARE
        return over

    def release(self) -> None:
        """After the run, once its processes are gone."""
        if self._lock_fd is None:
            return
        folder = os.path.join(self.scripts, self.key)
        if disk_bytes(folder, self.disk_bytes) > self.disk_bytes:
            sandbox.remove_aside(folder)
        os.close(self._lock_fd)
        self._lock_fd = None
        self.prune()

    def prune(self, keep: int = KEEP_SCRIPTS) -> None:
        """Remove the folders of all but the `keep` most recently run scripts, except those a
        run holds."""
        locks = [e for e in os.scandir(self.scripts)
                 if e.name.endswith(".lock") and e.is_file(follow_symlinks=False)]
        locks.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime, reverse=True)
        for entry in locks[keep:]:
            with contextlib.suppress(OSError):
                fd = os.open(entry.path, os.O_RDWR | os.O_NOFOLLOW)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # OSError: a run holds it
                    sandbox.remove_aside(entry.path[:-len(".lock")])
                    os.unlink(entry.path)
                finally:
                    os.close(fd)
