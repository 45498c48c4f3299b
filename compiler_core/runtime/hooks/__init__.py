"""Job-side hooks, each in a module named after the feature that attaches it
(`features/<name>.py` declares `attach=("runtime.hooks.<name>:attach",)`): what the job process
installs before the script, writing the feature's records through the `CaptureSession`.

The structured trace needs none (`session.TraceHandler` reads every entry a feature declares
`traced`); hooks shared by several features' stages (the backend and bytecode hooks, the IR
loggers) stay in `runtime/capture.py`.
"""

from __future__ import annotations

from ..session import CaptureSession


def attached(session: CaptureSession, stage: str, hook) -> None:
    """`hook(session)`; one missing in this torch costs its part only (a `stage_error`)."""
    try:
        hook(session)
    except (ImportError, AttributeError) as exc:
        session.writer.emit("stage_error", None, None, stage=stage,
                            message=f"not captured in this torch: {type(exc).__name__}: {exc}")
