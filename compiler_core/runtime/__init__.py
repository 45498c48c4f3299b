"""The job process: zygote, runner, capture hooks, timings, GPU kernels.

Importing this package imports no torch: the sandbox probe (`jail`) and the zygote's start
(which times torch's import as warm-up) come through it.
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from .capture import CaptureSession


def capture_this_process(stream: IO[str], user_file: str) -> CaptureSession:
    """Capture in the calling process as a job does (capture's settings, the hooks,
    `torch.compile` recording with no compile defaults), records to `stream`; for benches that
    measure capture's cost (the timings' settings stay off). Views are emitted only when the
    caller calls `emit_views()`."""
    from ..wire import RecordWriter
    from .callables import CompileRecorder
    from .capture import CaptureSession
    from .config import configure_capture, configure_process
    configure_process()
    configure_capture()
    session = CaptureSession(RecordWriter(stream), user_file)
    session.attach()
    CompileRecorder(session.writer, {}, user_file).install()
    return session
