"""Stage `guards`: the guard tree Dynamo installed, as text and as a list of leaf guards.

Each leaf guard names what it guards (the `source=` of its enclosing GuardManager, e.g.
`L['x']`), the user line PyTorch attributes it to (the `# file:line in fn` comment), its row
in the text (1-based) and whether it is a symbolic shape guard. Those are the shape
environment's guards that Dynamo appends after the root manager (`+- LAMBDA_GUARD: 2 <=
L['x'].size()[0]` at depth 0 on torch 2.13), relations between sizes the graph assumes.

`failed_guards` finds, in a compile's guards, the ones a recompile's reason names.
"""

from __future__ import annotations

import json
import re

from ..parsers.common import artifact, is_user_file
from .spec import Feature, Stage, record, traced

SPECS = (Stage("guards", "Guards", "Guards", "text", records=("dynamo_cpp_guards_str",),
                view="guards"),)
TREE_LINE = re.compile(r"^(?P<depth>(?:\| )*)\+- (?P<kind>\w+): (?P<body>.*)$")
# PyTorch may follow the location with a note: "... in f (user code shown is first use ...)".
LOCATION = re.compile(r"#\s*(?P<file>[^\s#]+):(?P<line>\d+) in (?P<fn>[\w<>]+)")
MANAGERS = ("RootGuardManager", "GuardManager", "DictGuardManager")
SIZE_EXPRESSION = re.compile(r"\.(size|stride|storage_offset)\(\)")
# A recompile reason about a tensor: "tensor 'x' size mismatch at index 0. expected 8, actual 4".
TENSOR_REASON = re.compile(r"^tensor '(?P<name>[^']+)' ")
# Reasons name a local as PyTorch's user sees it: `n == 3` for the guard `L['n'] == 3`.
LOCAL = re.compile(r"\bL\['(?P<name>\w+)'\]")
BLOCK = 1 << 16  # characters of a guards text split into lines at a time


def _user_line(body: str, user_file: str) -> int | None:
    match = LOCATION.search(body)
    if match and is_user_file(match["file"], user_file):
        return int(match["line"])
    return None


def guard_code(body: str) -> str:
    """The guard's code without PyTorch's trailing comments (user code, location, notes): what
    comes before the first `# ` after whitespace. String search, linear on any text (the
    regex `\\s+# ` took 1 s on 16 KB of spaces: every space started a new scan)."""
    start = body.find("# ", 1)
    while start > 0 and not body[start - 1].isspace():
        start = body.find("# ", start + 1)
    return (body[:start] if start > 0 else body).rstrip()


def _manager_source(body: str) -> str | None:
    """What a GuardManager guards: `source=L['x'], accessed_by=...` gives `L['x']`. Linear: the
    regex `source=(.+?), accessed_by=` took 5 s on 56 KB of `source=` (a script's own text)."""
    start = body.find("source=")
    if start < 0:
        return None
    end = body.find(", accessed_by=", start + len("source=") + 1)
    return body[start + len("source="):end] if end >= 0 else None


def text_lines(text: str):
    """`text.split("\n")`, a block at a time: split whole, a 17.7 MB guards text (65,000 guards)
    held a list of its 95,000 lines beside it while it was parsed (peak 73.5 MiB; 51.5 so, in
    the same time)."""
    start = 0
    while start <= len(text):
        end = text.find("\n", start + BLOCK)
        end = len(text) if end < 0 else end
        yield from text[start:end].split("\n")
        start = end + 1


def parse_guards(text: str, user_file: str) -> tuple[list[dict], list[int | None]]:
    """Leaf guards with their guarded source, plus the user line of every text line."""
    sources: dict[int, str] = {}
    guards, src_lines = [], []
    for row, line in enumerate(text_lines(text), start=1):
        match = TREE_LINE.match(line)
        user_line = _user_line(line, user_file) if match else None
        src_lines.append(user_line)
        if not match:
            continue
        depth = len(match["depth"]) // 2
        manager = _manager_source(match["body"])
        if manager is not None:
            sources[depth] = manager
            continue
        if match["kind"] in MANAGERS:
            continue
        owner = max((d for d in sources if d < depth), default=None)
        code = guard_code(match["body"])
        symbolic = depth == 0 or bool(SIZE_EXPRESSION.search(code))
        guards.append({"kind": match["kind"], "code": code, "line": user_line,
                       "source": sources.get(owner) if owner is not None else None,
                       "row": row, "symbolic": symbolic})
    return guards, src_lines


def failed_guards(reason: str, guards: list[dict]) -> list[int]:
    """Indexes of the guards a recompile's reason names: the TENSOR_MATCH of the tensor it
    names ("tensor 'x' ..."), else the guards whose code is the reason's first line, read
    with locals as the reason writes them (`n == 3` for `L['n'] == 3`)."""
    tensor = TENSOR_REASON.match(reason)
    if tensor:
        wanted = {tensor["name"], f"L['{tensor['name']}']"}
        return [i for i, g in enumerate(guards)
                if g["kind"] == "TENSOR_MATCH" and g["source"] in wanted]
    stated = guard_code(reason.split("\n")[0]).strip()
    return [i for i, g in enumerate(guards)
            if stated and LOCAL.sub(r"\g<name>", g["code"]).strip() == stated]


def with_failed_guards(recompiles: list[dict], compiles: list[dict]) -> list[dict]:
    """Each recompile with `failed_guards`: indexes into its previous compile's guards."""
    guards_of = {c["id"]: c["stages"].get("guards", {}).get("guards", []) for c in compiles}
    return [{**r, "failed_guards": failed_guards(r["reason"], guards_of.get(r["previous"], []))}
            for r in recompiles]


def listed_guards(payload: str) -> tuple[str, list[dict]]:
    """A `dynamo_guards` entry (PyTorch's JSON list of the guards' code, each with the stacks
    that made it; older torch's only guards in a TORCH_TRACE log): the code, one guard a row.
    Its guards have no tree, so no guarded source; their kind is `code`."""
    codes = [entry["code"] for entry in json.loads(payload)
             if isinstance(entry, dict) and isinstance(entry.get("code"), str)]
    return "\n".join(codes), [{"kind": "code", "code": code, "line": None, "source": None,
                               "row": row, "symbolic": bool(SIZE_EXPRESSION.search(code))}
                              for row, code in enumerate(codes, start=1)]


def _guards_of(compile_records) -> tuple[str, list[dict], list[int | None]]:
    """The guards' text, leaf guards and the user line of each text line: from the C++ guard
    tree, else (an older torch's TORCH_TRACE log) from the `dynamo_guards` list."""
    record = compile_records.first("dynamo_cpp_guards_str")
    if record is not None:
        # The stage's text: PyTorch's starts with a newline, so this is a copy (1-9 ms of the
        # ~1 s reading a 17.7 MB one takes); `strip` returns the payload itself where there is
        # nothing to strip.
        text = (record["payload"] or "").strip("\n")
        return (text, *parse_guards(text, compile_records.user_file))
    listed = compile_records.first("dynamo_guards")
    text, guards = listed_guards(listed["payload"]) if listed else ("", [])
    return text, guards, [None] * len(guards)


def extract(compile_records) -> dict:
    text, guards, src_lines = _guards_of(compile_records)
    if not text:
        return {}
    spec = SPECS[0]
    stage = artifact(spec.name, compile_records.compile_id, spec.title, spec.language, text,
                     src_lines)
    stage["guards"] = guards
    return {"guards": stage}


FEATURE = Feature("guards", records=(traced("dynamo_cpp_guards_str"),
                                     record("dynamo_guards", True)),
                  stages=SPECS, extract=extract)
