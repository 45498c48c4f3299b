"""Kernels and timings, around the user's script in the worker child.

`attach` (before the script): a record that the CPU's kernels carry profiling lines (set in
`runtime.config` when timings are measured; the output code's pane says so), autotuning hooks
(GPU).
`after_script`: the GPU's Triton kernels with their lowering stages, the timings of every
compiled callable (unless the `measure` option is off), and with the `gpu_preview` option the
preview of the kernels an H200 would run (meant for CPU-only machines; on a GPU it lets the
preview be checked against the kernels that ran). Each
step failing costs that step only (a `stage_error` record without a compile id names it); the
profiler's and compilers' chatter goes to /dev/null rather than the user's stderr.
"""

from __future__ import annotations

import contextlib
import os

from ..gpu import preview as gpu_preview
from ..gpu import triton_kernels
from ..session import CaptureSession
from . import timing


NOT_MEASURED = "Timings were not measured: the job's 'measure' option was off."


def attach(session: CaptureSession) -> None:
    """What the timings and the GPU's kernel records need set up before the script runs."""
    if session.device == "cpu" and session.options.measure:
        session.writer.emit("kernel_profile", None, None)  # runtime.config turned it on
    if session.device == "cuda":
        # The process's warm-up compiled a kernel before the job: it is not the job's.
        session.kernels_before = triton_kernels.WARM_UP_KERNELS
        triton_kernels.record_autotuning(session)


@contextlib.contextmanager
def quiet_stderr():
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def after_script(recorder, session: CaptureSession, device: str, preview: bool,
                 timings: bool, timing_lock_fd: int | None = None) -> None:
    """The Triton kernels' records are read while the timings' first, untimed step runs (their
    disassembly runs in other processes) and written before anything is timed."""
    with quiet_stderr():
        kernels = None
        if device == "cuda":
            started = guarded(session, "triton_kernels", lambda: triton_kernels.collect(session))
            kernels = Once(session, "triton_kernels", started)
        if timings:
            guarded(session, "timings", lambda: timing.measure_all(
                recorder, session, device, before_timed=kernels, lock_fd=timing_lock_fd))
        else:
            session.writer.emit("note", None, None, text=NOT_MEASURED)
        if kernels:
            kernels()
        if preview:
            guarded(session, "gpu_preview", lambda: gpu_preview.preview(session))


def guarded(session: CaptureSession, stage: str, step):
    """`step()`, or None where it failed: a failing step costs that step, not the result (a
    `stage_error` record names it)."""
    try:
        return step()
    except Exception as exc:
        session.writer.emit("stage_error", None, None, stage=stage,
                            message=f"{type(exc).__name__}: {exc}"[:1000])
        return None


class Once:
    """A started step's second half (`finish`, e.g. writing records once background work ended),
    run at its first call only, guarded as a step."""

    def __init__(self, session: CaptureSession, stage: str, finish) -> None:
        self.session, self.stage, self.finish = session, stage, finish

    def __call__(self) -> None:
        finish, self.finish = self.finish, None
        if finish:
            guarded(self.session, self.stage, finish)
