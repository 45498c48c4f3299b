"""Kernels and timings, around the user's script in the worker child.

`before_script`: a note on the CPU's kernel profiling (set in `runtime.config` when timings
are measured), autotuning hooks (GPU). `after_script`: the GPU's Triton kernels with their
lowering stages, the timings of every compiled callable (unless the `measure` option is off),
and with the `gpu_preview` option the preview of the kernels an H200 would run (meant for
CPU-only machines; on a GPU it lets the preview be checked against the kernels that ran). Each
step failing costs that step only (a `stage_error` record without a compile id names it); the
profiler's and compilers' chatter goes to /dev/null rather than the user's stderr.
"""

from __future__ import annotations

import contextlib
import fcntl
import os

from ..capture import CaptureSession
from ..gpu import preview as gpu_preview
from ..gpu import triton_kernels
from . import timing


NOT_MEASURED = "Timings were not measured: the job's 'measure' option was off."


def before_script(session: CaptureSession, device: str, timings: bool) -> None:
    if device == "cpu" and timings:
        session.writer.emit("note", None, None, text=(
            "Each C++ kernel in the generated code carries a RECORD_FUNCTION line (Inductor's "
            "cpp.enable_kernel_profile) so that the profiler can time it; without torchbolt "
            "that line is absent."))
    if device == "cuda":
        # The process's warm-up compiled a kernel before the job: it is not the job's.
        session.kernels_before = triton_kernels.WARM_UP_KERNELS
        triton_kernels.record_autotuning(session)


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
    steps = []
    if device == "cuda":
        steps.append(("triton_kernels", lambda: triton_kernels.collect(session)))
    if timings:
        def measure_locked():
            with held(timing_lock_fd):
                timing.measure_all(recorder, session, device)
        steps.append(("timings", measure_locked))
    else:
        session.writer.emit("note", None, None, text=NOT_MEASURED)
    if preview:
        steps.append(("gpu_preview", lambda: gpu_preview.preview(session)))
    with quiet_stderr():
        for stage, step in steps:
            try:
                step()
            except Exception as exc:  # a failing step costs that step, not the result
                session.writer.emit("stage_error", None, None, stage=stage,
                                    message=f"{type(exc).__name__}: {exc}"[:1000])
