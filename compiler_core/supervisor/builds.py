"""Results built in a process of their own, under a time and memory budget (a server's builds).

A job's records are hostile input within the record limits, and reading them into a result can
cost the server far more than they weigh: two output-code texts of 4 M empty lines (8 MB of
records) took 4 s of CPU and 760 MB to read, in the server's process, under its GIL, once per
poll. A server builds each partial and final result with `bounded_build` instead: a warm helper
(a Python that has imported the result builder, no torch; `serve` below) forks one process
per build, which runs under `build_seconds` of CPU time and `build_memory` of address space;
the server waits for it at most `build_seconds` of wall-clock time. Whatever a build costs ends
with its process, and the server's threads only send the records and read the result back.
Past either limit the build gives a result without stages whose error names them.

Each build gets a socket of its own, passed to the helper with the build's one-byte request
(SCM_RIGHTS); the forked process reads the records from it and writes the result back, pickled
(both sides are this package: nothing the job wrote is unpickled, only the builder's output).
"""

from __future__ import annotations

import os
import pickle
import resource
import signal
import socket
import subprocess
import sys
import threading
import time

from ..errors import ErrorKind
from ..limits import limit
from ..report.result import build_result

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIMIT_PREFIX = "TORCHBOLT_LIMIT_"
HELPER = "import sys; from compiler_core.supervisor.builds import serve; serve(int(sys.argv[1]))"


class _Helper:
    """The warm helper process, started on the first build and again if it died."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._control: socket.socket | None = None

    def connect(self) -> socket.socket:
        """A socket to a freshly forked build process."""
        ours, theirs = socket.socketpair()
        try:
            with self._lock:
                for attempt in (1, 2):
                    if self._proc is None or self._proc.poll() is not None:
                        self._start()
                    try:
                        socket.send_fds(self._control, [b"b"], [theirs.fileno()])
                        break
                    except OSError:
                        if attempt == 2:
                            raise
                        self._proc = None  # it died: start another
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        return ours

    def _start(self) -> None:
        if self._control is not None:
            self._control.close()
        server_end, helper_end = socket.socketpair()
        self._proc = subprocess.Popen(
            [sys.executable, "-c", HELPER, str(helper_end.fileno())],
            pass_fds=[helper_end.fileno()], stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(
                filter(None, (PACKAGE_ROOT, os.environ.get("PYTHONPATH"))))})
        helper_end.close()
        self._control = server_end


_HELPER = _Helper()


def bounded_build(records: list[dict], user_file: str, run: dict | None = None) -> dict:
    """`build_result(records, user_file, run)` in a build process within `build_seconds` and
    `build_memory`; past either, the result without stages, its error naming them."""
    seconds, memory = limit("build_seconds"), limit("build_memory")
    deadline = time.monotonic() + seconds
    limits = {k: v for k, v in os.environ.items() if k.startswith(LIMIT_PREFIX)}
    request = pickle.dumps((records, user_file, run, seconds, memory, limits),
                           protocol=pickle.HIGHEST_PROTOCOL)
    try:
        with _HELPER.connect() as conn:
            conn.settimeout(seconds)
            conn.sendall(len(request).to_bytes(8, "big"))
            conn.sendall(request)
            del request
            answer = _read_all(conn, deadline)
        status, value = pickle.loads(answer)
    except (OSError, EOFError, pickle.UnpicklingError, ValueError, TimeoutError):
        status, value = "failed", None
    if status == "ok":
        return value
    return unbuilt(user_file, run, seconds, memory)


def _read_all(conn: socket.socket, deadline: float) -> bytes:
    chunks = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        conn.settimeout(remaining)
        chunk = conn.recv(1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def unbuilt(user_file: str, run: dict | None, seconds: float, memory: int) -> dict:
    """The result of records that could not be read within the build limits: what the
    supervisor knows (output, duration), no stages, and an error that names the limits."""
    error = ErrorKind.RECORD_LIMIT.error(
        f"reading the job's records into a result went past the server's limits of "
        f"{seconds:g} s and {memory >> 20:,} MiB (build_seconds / build_memory), so its stages "
        "are not shown")
    run = {**(run or {}), "error": error,
           "truncated": [*(run or {}).get("truncated", []),
                         {"limit": "build_seconds", "message": error["message"]}]}
    return build_result([], user_file, run)


# -- the helper and its build processes
def _build_one(conn: socket.socket) -> None:
    """In a forked build process: read the request, build within the limits, answer."""
    size = int.from_bytes(_read_exactly(conn, 8), "big")
    records, user_file, run, seconds, memory, limits = pickle.loads(_read_exactly(conn, size))
    for name in [k for k in os.environ if k.startswith(LIMIT_PREFIX)]:
        del os.environ[name]
    os.environ.update(limits)  # the server's limits, as they are now
    cpu = int(seconds) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    try:
        answer = ("ok", build_result(records, user_file, run))
    except MemoryError:
        answer = ("memory", None)
    del records
    conn.sendall(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))


def _read_exactly(conn: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = conn.recv(min(size - len(data), 1 << 20))
        if not chunk:
            raise EOFError
        data += chunk
    return bytes(data)


def serve(fd: int) -> None:
    """The helper: fork one build process per request until the server closes its socket."""
    control = socket.socket(fileno=fd)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # build processes are reaped by the kernel
    while True:
        message, fds, _, _ = socket.recv_fds(control, 1, 1)
        if not message:
            return
        if not fds:
            continue
        if os.fork() == 0:
            control.close()
            code = 0
            try:
                with socket.socket(fileno=fds[0]) as conn:
                    _build_one(conn)
            except BaseException:
                code = 1
            os._exit(code)
        os.close(fds[0])

