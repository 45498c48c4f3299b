"""Where a compile came from: the frame Dynamo intercepted and, for a frame in library code,
the line of the user's script whose call led to it.

`torch.compile(module)` makes Dynamo intercept `inner` in `torch/_dynamo/external_utils.py`
(its wrapper of the module's `__call__`, torch 2.11-2.13), and graph breaks in a library's
method make compiles of frames in `torch/nn/...`: their own line is in a foreign file. Their
`qualname` names what they run (`TransformerEncoder.forward`) and `user_line` where the user's
script called it.
"""

from __future__ import annotations

from .common import is_int, is_user_file

# Dynamo's wrapper of a compiled nn.Module's `__call__`: the frame it intercepts for one.
MODULE_WRAPPER = ("torch/_dynamo/external_utils.py", "inner")


def _dynamo_stack(group) -> list[dict]:
    start = group.first("dynamo_start")
    return start["meta"].get("stack", []) if start else []


def _def_line(frame: dict, bytecode: dict | None) -> int | None:
    """The frame's `def` line where the bytecode hook found one for the same code (the line
    Dynamo gives is the first decorator's: runtime/def_lines.py), else the line as given."""
    meta = bytecode["meta"] if bytecode else {}
    same = (meta.get("filename"), meta.get("line")) == (frame["filename"], frame["line"])
    return meta["def_line"] if same and is_int(meta.get("def_line")) else frame["line"]


def frame_of(group) -> dict:
    """The frame Dynamo intercepted (innermost frame of `dynamo_start`, else the bytecode
    hook's), with the qualified name of what it runs."""
    stack = _dynamo_stack(group)
    bytecode = group.first("bytecode")
    if stack:
        frame = stack[-1]
        found = {"name": frame.get("name"), "filename": frame.get("filename"),
                 "line": frame.get("line")}
    elif bytecode:
        meta = bytecode["meta"]
        found = {"name": meta["name"], "filename": meta["filename"], "line": meta["line"]}
    else:
        return {"name": None, "filename": None, "line": None, "qualname": None}
    qualname = bytecode["meta"].get("qualname") if bytecode else None
    found["line"] = _def_line(found, bytecode)
    nodes = group.first("fx_nodes")
    root = nodes["meta"].get("root_module") if nodes else None
    if root and (found["filename"] or "").endswith(MODULE_WRAPPER[0]) \
            and found["name"] == MODULE_WRAPPER[1]:
        qualname = f"{root}.forward"
    return {**found, "qualname": qualname or found["name"]}


def user_line(group) -> int | None:
    """The innermost line of the user's script on the stack when Dynamo started this compile,
    the compiled frame itself left out (so a function's compile names the line calling it)."""
    callers = _dynamo_stack(group)[:-1]
    lines = [f.get("line") for f in callers if isinstance(f.get("filename"), str)
             and is_user_file(f["filename"], group.user_file)]
    return lines[-1] if lines else None
