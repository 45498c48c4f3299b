"""Where each compile came from and how it ended: its frame (`frame`), the user's line that led
to it (`user_line`), and why it failed (`failure`, from PyTorch's compilation metrics)."""

from __future__ import annotations

from ..parsers.callsite import frame_of, user_line
from .spec import Feature, Part, record

NO_FRAME = {"name": None, "filename": None, "line": None, "qualname": None}


def failure_of(group) -> dict | None:
    """Why the compile failed (e.g. fullgraph=True hit a break), from PyTorch's metrics."""
    metrics = group.first("compilation_metrics")
    if metrics is None or not metrics["meta"].get("fail_type"):
        return None
    meta = metrics["meta"]
    line = meta.get("fail_user_frame_lineno")
    in_user_file = meta.get("fail_user_frame_filename") == group.user_file
    return {"type": meta["fail_type"], "reason": meta.get("fail_reason") or "",
            "line": line if in_user_file else None}


FEATURE = Feature(
    "frames", records=(record("dynamo_start"),),
    compile_parts=(Part("frame", lambda group, compiled: frame_of(group), NO_FRAME),
                   Part("user_line", lambda group, compiled: user_line(group)),
                   Part("failure", lambda group, compiled: failure_of(group))))
