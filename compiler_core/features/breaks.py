"""Graph breaks, a run-level list built from PyTorch's own messages.

A break is reported by Dynamo as the `dynamo_graph_break_reason` artifact of the compile it ended;
the code after it resumes in a new frame named `torch_dynamo_resume_in_<fn>_at_<line>`, whose
compile id is the break's `resumes_in`.

One definition of a break, shown as one count everywhere: each break Dynamo reported, one per
compile that broke (a frame recompiled for a new value breaks again and counts again), the
repeat of a restarted attempt left out. That is PyTorch's own count: the total of
`torch._dynamo.utils.counters["graph_break"]` and the number of `graph_breaks` log messages
(torch 2.11-2.14).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import textwrap
from functools import lru_cache

from ..parsers.callsite import traceback_frames
from ..parsers.common import is_user_file, last_user_line
from .spec import ARTIFACT, Feature, Part, traced

# Not a stage but a run-level list; its records are still announced live, under this name.
PROGRESS = {"dynamo_graph_break_reason": "graph_break"}

HEADER = "Graph break in user code at "
REASON = re.compile(r"Graph Break Reason: (?P<reason>.*)")
FIELDS = ("Explanation", "Hint", "Developer debug context")
URL = re.compile(r"https://\S+")
GB_CODE = re.compile(r"/gb/(?P<code>gb\d+)\.html")  # in the link PyTorch gives for its break
TRACEBACK = "Traceback (most recent call last):"
RAISED = "torch._dynamo.exc.Unsupported: "  # the exception `exc.unimplemented` raises
CHAINED = "*** While handling this graph break, another graph break occurred: ***"
HOP_CONTEXT = "Higher Order Operator: "
RESUME_PREFIX = "torch_dynamo_resume_in_"
FRAME_BLOCK = re.compile(r'(  File "([^"]+)", line \d+, in .*\n(?:    .*\n)*)')


def _user_traceback(text: str, user_file: str) -> str:
    """The frames of the user's file from Dynamo's "User code traceback" (no runner frames)."""
    tail = text.split("User code traceback:", 1)
    if len(tail) < 2:
        return ""
    frames = FRAME_BLOCK.findall(tail[1].split("Traceback (most recent call last)", 1)[0])
    return "".join(block for block, path in frames if is_user_file(path, user_file))


# These parsers use string search, not regexes: they read text a script controls, and the
# regexes `HEADER (.+):(\d+)` and `^\s*(Hint|...): ` backtracked quadratically on it (1 s for
# 64 KB; a 126 KB upload froze the server for 26 s).
def _header_at(line: str) -> tuple[str, int] | None:
    """`(file, line)` of a "Graph break in user code at FILE:LINE" header starting `line`:
    the last `:digits` of the line ends the file name."""
    if not line.startswith(HEADER):
        return None
    rest = line[len(HEADER):]
    colon = rest.rfind(":")
    while colon > 0 and not rest[colon + 1:colon + 2].isdecimal():
        colon = rest.rfind(":", 0, colon)
    if colon <= 0:
        return None
    digits = rest[colon + 1:]
    end = next((i for i, c in enumerate(digits) if not c.isdecimal()), len(digits))
    return rest[:colon], int(digits[:end][:9] or 0)


def _header(payload: str) -> tuple[str, int] | None:
    """The first break header in the payload (it may follow other text on its line). A line
    whose first header has no `:LINE` has none in a later header either (each later one reads a
    part of the same line), so the search goes on at the next line: linear in the payload."""
    start = payload.find(HEADER)
    while start >= 0:
        end = payload.find("\n", start)
        end = end if end >= 0 else len(payload)
        found = _header_at(payload[start:end])
        if found:
            return found
        start = payload.find(HEADER, end)
    return None


def _fields(message: str) -> list[tuple[str, str]]:
    """`(key, value)` of each "Explanation: ...", "Hint: ..." field, in order. A field goes on
    over the more indented lines after it: a data-dependent branch's explanation holds the
    condition's computation there ("The branch condition involves a tensor computed as
    follows:" and the FX code of it)."""
    found: list[tuple[str, list[str]]] = []
    for line in message.split("\n"):
        stripped = line.lstrip()
        key = next((k for k in FIELDS if stripped.startswith(k + ": ")), None)
        if key:
            found.append((key, [stripped[len(key) + 2:]]))
        elif found and (not stripped or line.startswith("   ")):
            found[-1][1].append(line)
        elif found:
            found.append(("", []))  # an unindented line ends the field
    return [(key, _field_value(lines)) for key, lines in found if key]


def _field_value(lines: list[str]) -> str:
    first, rest = lines[0].strip(), textwrap.dedent("\n".join(lines[1:])).strip()
    return f"{first}\n\n{rest}" if rest else first


def _raised_message(payload: str) -> str | None:
    """The message of the `Unsupported` exception Dynamo handled, as the payload's last part,
    `traceback.format_exc()`, ends with it (torch 2.11-2.14: symbolic_convert.py
    `log_graph_break`): its text as raised, before PyTorch adds context to the reason above.
    Only its first line starts unindented (`exc.format_graph_break_message` indents the rest),
    so the first line starting `RAISED` after the last traceback header is the exception's."""
    start = payload.rfind(TRACEBACK)
    at = payload.find("\n" + RAISED, start) if start >= 0 else -1
    return payload[at + 1 + len(RAISED):] if at >= 0 else None


def _gb_type(payload: str, message: str) -> str | None:
    """PyTorch's name of the break, its `gb_type`. No trace artifact carries it as a field
    (torch 2.11-2.14: `dynamo_graph_break_reason` is text; `Unsupported.gb_type` lives on the
    exception object only), but `exc.format_graph_break_message` starts the exception's message
    with it, and a break raised while handling another gives its own after the last
    `CHAINED` line. Where the payload has no such exception (a reason without the traceback),
    the line above the (last break's) "Explanation:" field, past the "Higher Order Operator: ..."
    line that `exc.augment_exc_message_with_hop_name` inserts there (torch 2.13-2.14) for a
    break inside a higher-order op."""
    raised = _raised_message(payload)
    if raised is not None:
        first = raised.rpartition(CHAINED)[2].lstrip("\n").partition("\n")[0].strip()
        if first:
            return first
    lines = [line.strip() for line in message.rpartition(CHAINED)[2].split("\n")]
    for at, line in enumerate(lines):
        if line.startswith("Explanation: "):
            above = [x for x in lines[:at] if x and not x.startswith(HOP_CONTEXT)]
            title = above[-1].removeprefix("Graph Break Reason:").strip() if above else ""
            return title or None
    return None


@lru_cache(maxsize=1)
def _registry_ids() -> dict[str, str | None]:
    """gb_type -> id in the installed torch's graph-break registry (torch 2.13-2.15: a JSON
    object of `"GB0059": [{"Gb_type": ..., ...}, ...]`, an id's earlier names listed too); a
    gb_type listed under two ids (PyTorch calls its id undefined) maps to None. Found without
    importing torch; a torch without the file has no ids."""
    spec = importlib.util.find_spec("torch")
    folder = os.path.dirname(spec.origin) if spec and spec.origin else ""
    try:
        with open(os.path.join(folder, "_dynamo", "graph_break_registry.json")) as f:
            registry = json.load(f)
    except (OSError, ValueError):
        return {}
    ids: dict[str, str | None] = {}
    for gb_id, entries in registry.items():
        for entry in entries:
            gb_type = entry["Gb_type"]
            ids[gb_type] = gb_id if ids.get(gb_type, gb_id) == gb_id else None
    return ids


def registry_id(gb_type: str | None) -> str | None:
    """The id (GB0059) of a break named `gb_type` in the installed torch's registry."""
    return _registry_ids().get(gb_type) if gb_type else None


def full_reason(message: str) -> str:
    """The reason as PyTorch states it, every line of it (explanation, hints, debug context,
    link), without the "Graph break in user code at" header (the break's `line` says where)."""
    lines = [line for line in message.strip("\n").split("\n") if not _header_at(line)]
    return "\n".join(lines).replace("Graph Break Reason: ", "", 1).strip()


def parse_break(payload: str, user_file: str) -> dict:
    header = _header(payload)
    user_traceback = _user_traceback(payload, user_file)
    line = None
    if header and is_user_file(header[0], user_file):
        line = header[1]
    line = line or last_user_line(user_traceback, user_file)
    message = payload.split("User code traceback:", 1)[0]
    fields = _fields(message)
    reason = REASON.search(message)
    title = _gb_type(payload, message)
    stated = reason["reason"].strip() if reason else None
    url = URL.search(message.rpartition(CHAINED)[2])  # the link of the break `title` names
    code = GB_CODE.search(url[0]) if url else None
    return {
        "line": line,
        "reason": " ".join(filter(None, [stated, title if title != stated else None])),
        "full_reason": full_reason(message),
        "gb_type": title,
        "gb_code": code["code"].upper() if code else registry_id(title),
        "explanation": next((v for k, v in fields if k == "Explanation"), None),
        "hints": [v for k, v in fields if k == "Hint"],
        "url": url[0] if url else None,
        "user_traceback": user_traceback,
    }


def original_name(frame_name: str) -> str:
    """`f` for Dynamo's resume function of f (`torch_dynamo_resume_in_f_at_11`, also when it
    resumes a resume function), else the name itself."""
    if not frame_name.startswith(RESUME_PREFIX):
        return frame_name
    name, found, line = frame_name[len(RESUME_PREFIX):].rpartition("_at_")
    return name if found and name and line.isdecimal() else frame_name


def broken_frame(brk: dict, frame_name: str | None) -> dict | None:
    """The frame of the break's user traceback that ran the compiled frame (innermost of that
    function's name): where it broke, also when the break itself is inside a function it
    called (an autograd.Function's forward, a helper)."""
    if not frame_name:
        return None
    name = original_name(frame_name)
    frames = [f for f in traceback_frames(brk["user_traceback"]) if f["name"] == name]
    return frames[-1] if frames else None


def frame_id(compile_id: str | None) -> str | None:
    """The frame part of a compile id (`1` of `1/2`): one code object's compiles share it."""
    return compile_id.partition("/")[0] if compile_id else None


def _resume_compile(compiles: list[dict], brk: dict, frame_name: str | None,
                    starts: dict[str, int], at: int) -> str | None:
    """The compile of the resume function the code after the break ran in, named after the
    broken frame's function and line: the first one that started after the break's record,
    else (its cache entry served the call) the last one before it. A frame never resumes in
    itself, so compiles of the frame that broke are not candidates."""
    frame = broken_frame(brk, frame_name)
    ending = f"_at_{frame['line'] if frame else brk['line']}"
    wanted = RESUME_PREFIX + original_name(frame_name) + ending if frame else None
    own = frame_id(brk["compile_id"])

    def resumes_here(name: str) -> bool:
        if wanted:
            return name == wanted
        return name.startswith(RESUME_PREFIX) and name.endswith(ending)

    resumes = sorted((starts[c["id"]], c["id"]) for c in compiles
                     if resumes_here(c["frame"]["name"] or "") and c["id"] in starts
                     and frame_id(c["id"]) != own)
    after = [cid for start, cid in resumes if start > at]
    before = [cid for start, cid in resumes if start < at]
    return after[0] if after else (before[-1] if before else None)


def graph_breaks(records: list[dict], compiles: list[dict], user_file: str) -> list[dict]:
    starts: dict[str, int] = {}
    for index, record in enumerate(records):
        starts.setdefault(record.get("compile_id"), index)
    frame_names = {c["id"]: c["frame"]["name"] for c in compiles}
    breaks, seen = [], set()
    for index, record in enumerate(records):
        if record["name"] != "dynamo_graph_break_reason":
            continue
        parsed = parse_break(record["payload"] or "", user_file)
        key = (record["compile_id"], parsed["line"], parsed["reason"])
        if key in seen:  # Dynamo may report one break once per restart attempt
            continue
        seen.add(key)
        brk = {"compile_id": record["compile_id"], **parsed}
        breaks.append({**brk, "resumes_in": _resume_compile(
            compiles, brk, frame_names.get(record["compile_id"]), starts, index)})
    return breaks


FEATURE = Feature(
    "breaks", records=(traced("dynamo_graph_break_reason", ARTIFACT),),
    run_parts=(Part("graph_breaks",
                    lambda run: graph_breaks(run.records, run.compiles, run.user_file), []),))
