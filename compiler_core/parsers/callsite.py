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


# The frames of a traceback as `traceback.format_list` writes them (Python 3.11+): a header
# `  File "PATH", line N, in NAME`, the stripped source line indented by 4, and under it,
# where the failing expression is not the whole line, carets (`^`, `~`) under its columns.
FRAME_HEADER = '  File "'
CARETS = frozenset(" ^~")
RESUME_CHARS = 200_000  # of a resume function's disassembly read (~4,000 instructions)


def _frame_header(line: str) -> tuple[str, int, str] | None:
    """`(path, line, function)` of a frame header, else None. String search: the text is a
    job's, so no regex (the path may hold anything but a newline)."""
    if not line.startswith(FRAME_HEADER):
        return None
    path, found, rest = line[len(FRAME_HEADER):].rpartition('", line ')
    number, found_in, name = rest.partition(", in ")
    if not (found and found_in and number.isdecimal()):
        return None
    return path, int(number[:9]), name.strip()


def _call_at(text: str) -> str | None:
    """The call that starts `text` (`y.sum().item()` of `y.sum().item() + 1  # note`): names,
    dots and bracketed parts up to the first character that cannot go on with them, cut back
    to the last `)` that closes at depth 0; None when no call starts there."""
    depth, quote, last_close = 0, None, -1
    for at, c in enumerate(text):
        if quote:
            quote = None if c == quote and text[at - 1] != "\\" else quote
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                break
            depth -= 1
            last_close = at if c == ")" and depth == 0 else last_close
        elif depth == 0 and not (c.isalnum() or c in "_."):
            break
    return text[:last_close + 1] if last_close > 0 else None


def _expression(source: str, carets: str | None) -> str:
    """What the frame ran on its line: the call starting where the carets start, else the
    line. Only the carets' start is taken: Dynamo's frames can carry no end column, and then
    Python marks up to the end of the line (torch 2.13, Python 3.11); no carets: the
    expression is the whole line."""
    start = next((at for at, c in enumerate(carets or "") if c in "^~"), -1)
    if start < 0:
        return source.strip()
    return _call_at(source[start:]) or source.strip()


def traceback_frames(text: str) -> list[dict]:
    """Each frame of a formatted traceback, outermost first: `file`, `line`, `name` and
    `expression` (what the frame was running on that line, as the carets mark it; None when
    the traceback shows no source)."""
    frames, lines = [], text.split("\n")
    for at, line in enumerate(lines):
        header = _frame_header(line)
        if header is None:
            continue
        source = lines[at + 1] if at + 1 < len(lines) and lines[at + 1].startswith("    ") else None
        below = lines[at + 2] if source is not None and at + 2 < len(lines) else ""
        carets = below if below.strip() and set(below) <= CARETS else None
        frames.append({"file": header[0], "line": header[1], "name": header[2],
                       "expression": _expression(source, carets) if source is not None else None})
    return frames


def _instruction(line: str) -> tuple[set[str], str, str] | None:
    """`(places, opname, rest)` of one line of `dis.dis` output: places are the instruction's
    offset and label (`172`, `L1`: what a jump's `(to ...)` names), opname the first upper-case
    word. None for a line without an instruction."""
    places, numbers, words = set(), [], line.split()
    for at, word in enumerate(words):
        if word.isdecimal():
            numbers.append(word)  # the source line's number, then the offset
        elif word.endswith(":") and word[:-1].isalnum():
            places.add(word[:-1])
        elif word.replace("_", "").isalpha() and word.isupper():
            return places | set(numbers[-1:]), word, " ".join(words[at + 1:])
        elif word != ">>":  # a jump target's mark
            return None
    return None


def resume_stack(dis_text: str) -> tuple[int, bool] | None:
    """For a resume function's original bytecode (`dis.dis` of it, Python 3.11-3.13): how many
    values of the broken frame's stack it receives (`___stack0`, `___stack1`, ...), and whether
    the instruction it resumes after was a call, so that the last of them is what that call
    returned. Dynamo's prologue loads each `___stackN`, then jumps `(to X)` into the original
    code, where the instruction listed before X is the one that broke (torch 2.11-2.14,
    resume_execution.py). None when the first `RESUME_CHARS` of the text show no such
    prologue; only lines naming X are parsed past it."""
    lines = dis_text[:RESUME_CHARS].split("\n")
    slots, target, jump = 0, "", len(lines)
    for jump, line in enumerate(lines):
        found = _instruction(line)
        if found and found[1].startswith("JUMP"):
            target = found[2].rpartition("(to ")[2].rstrip(")").strip()
            break
        slots += bool(found) and found[1] == "LOAD_FAST" and "(___stack" in found[2]
    if not slots or not target:
        return None
    previous = None
    for line in lines[jump + 1:]:
        found = _instruction(line) if target in line else None
        if found and target in found[0]:
            return slots, previous is not None and _is_call(previous)
        previous = line if line.strip() else previous  # dis puts a blank line between lines
    return slots, False


def _is_call(line: str) -> bool:
    found = _instruction(line)
    return bool(found) and (found[1].startswith("CALL") or found[1] == "PRECALL")
