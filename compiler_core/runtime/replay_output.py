"""What torchbolt's own work after the script prints, kept apart from what the script printed.

Timings replay the script's compiled calls hundreds of times (and the views re-run its graphs): a
`print` inside a compiled function (a graph break) printed once by the script would print
thousands of times more (3,995 lines for lesson 3's one print, measured). While that work runs,
file descriptors 1 and 2 point at a nameless file of the job's /tmp instead of its output (two
jobs outside the sandbox share one /tmp: a fixed name was theirs to clobber), and a
`replay_output` record says how much was printed there, with its first `HEAD_BYTES`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile

HEAD_BYTES = 8192


@contextlib.contextmanager
def set_aside(writer):
    """Send fds 1 and 2 to the job's replay file while the block runs, then record its size."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile() as replay_file:
        target = os.dup(replay_file.fileno())
    os.dup2(target, 1)
    os.dup2(target, 2)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, original in zip((1, 2), saved):
            os.dup2(original, fd)
            os.close(original)
        _record(writer, target)


def _record(writer, fd: int) -> None:
    """One pass over the replay file: its lines counted, its first `HEAD_BYTES` kept."""
    size, lines, head = os.fstat(fd).st_size, 0, b""
    os.lseek(fd, 0, os.SEEK_SET)
    while chunk := os.read(fd, 1 << 20):
        head, lines = head or chunk[:HEAD_BYTES], lines + chunk.count(b"\n")
    if size:
        writer.emit("replay_output", None, None, bytes=size, lines=lines,
                    head=head.decode("utf-8", errors="replace"))
    os.close(fd)
