"""The worker's timing lock (e.g. its GPU's, shared by all workers of a machine): a file held
with flock by a job's timed steps only (see `timing.LOCKED_STEPS`)."""

from __future__ import annotations

import contextlib
import fcntl


@contextlib.contextmanager
def held(lock_fd: int | None):
    """The worker's timing lock (e.g. its GPU's), held while timing: jobs that share it compile
    at once but time one at a time. Waiting for it is the job's own time, under its limits."""
    if lock_fd is None:
        yield
        return
    fcntl.flock(lock_fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(lock_fd, fcntl.LOCK_UN)


@contextlib.contextmanager
def held_if_free(lock_fd: int | None):
    """The timing lock if no one holds it now (yields True), else nothing (False): for work
    worth doing only when it waits for no one."""
    if lock_fd is None:
        yield True
        return
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        yield False
        return
    try:
        yield True
    finally:
        fcntl.flock(lock_fd, fcntl.LOCK_UN)
