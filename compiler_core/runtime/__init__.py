"""The job process: zygote, runner, capture hooks, timings, GPU kernels.

Importing this package imports no torch: the sandbox probe (`jail`) and the zygote's start
(which times torch's import as warm-up) come through it.
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from .session import CaptureSession


def capture_this_process(stream: IO[str], user_file: str) -> CaptureSession:
    """Capture in the calling process as a job does (capture's settings, the structured trace,
    every feature's hooks), records to `stream`; for benches that measure capture's cost. The
    default options' compile defaults are `torch.compile`'s own, and the timings' settings stay
    off. Views are emitted only when the caller calls `emit_views()`."""
    from ..options import Options
    from ..wire import RecordWriter
    from .config import configure_capture, configure_process
    from .runner import attach_features, resolve_device
    from .session import CaptureSession
    configure_process()
    configure_capture()
    options = Options(measure=False)
    session = CaptureSession(RecordWriter(stream), user_file, options,
                             resolve_device(options.device))
    session.attach()
    attach_features(session)
    return session
