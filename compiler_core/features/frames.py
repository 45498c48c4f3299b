"""Where each compile came from and how it ended: its frame (`frame`), the user's line that led
to it (`user_line`), and why it failed (`failure`, from PyTorch's compilation metrics)."""

from __future__ import annotations

from ..parsers.callsite import frame_of, traceback_frames, user_line
from ..parsers.common import is_user_file
from .spec import ARTIFACT, Feature, Part, traced

NO_FRAME = {"name": None, "filename": None, "line": None, "qualname": None}


def failure_of(group) -> dict | None:
    """Why the compile failed (e.g. fullgraph=True hit a break), from PyTorch's metrics; the
    line is the innermost of the user's file where the error arose."""
    metrics = group.first("compilation_metrics")
    if metrics is None or not metrics["meta"].get("fail_type"):
        return None
    meta = metrics["meta"]
    line = meta.get("fail_user_frame_lineno")
    if meta.get("fail_user_frame_filename") != group.user_file:
        line = _user_line_of_error(group)
    return {"type": meta["fail_type"], "reason": meta.get("fail_reason") or "", "line": line}


def _user_line_of_error(group) -> int | None:
    """The metrics name the innermost frame of any file (torch 2.13: `module.py:586` for a
    buffer mutated in a torch.cond branch); the `dynamo_error` artifact's "from user code:"
    frames, outermost first, hold the user's own (its first header is indented by 3)."""
    error = group.first("dynamo_error")
    if error is None:
        return None
    section = (error["payload"] or "").partition("\nfrom user code:\n")[2]
    lines = ("  " + line.lstrip() if line.lstrip().startswith('File "') else line
             for line in section.split("\n"))
    user = [frame["line"] for frame in traceback_frames("\n".join(lines))
            if is_user_file(frame["file"], group.user_file)]
    return user[-1] if user else None


FEATURE = Feature(
    "frames", records=(traced("dynamo_start"), traced("dynamo_error", ARTIFACT)),
    compile_parts=(Part("frame", lambda group, compiled: frame_of(group), NO_FRAME),
                   Part("user_line", lambda group, compiled: user_line(group)),
                   Part("failure", lambda group, compiled: failure_of(group))))
