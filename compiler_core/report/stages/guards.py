"""Stage `guards`: the guard tree Dynamo installed, as text and as a list of leaf guards.

Each leaf guard names what it guards (the `source=` of its enclosing GuardManager, e.g.
`L['x']`) and the user line PyTorch attributes it to (the trailing `# file:line in fn`).
"""

from __future__ import annotations

import re

from .common import artifact, is_user_file
from .spec import Stage

SPECS = (Stage("guards", "Guards", "Guards", "text", records=("dynamo_cpp_guards_str",)),)
TREE_LINE = re.compile(r"^(?P<depth>(?:\| )*)\+- (?P<kind>\w+): (?P<body>.*)$")
LOCATION = re.compile(r"#\s*(?P<file>[^\s#]+):(?P<line>\d+) in (?P<fn>\S+)\s*$")
MANAGER_SOURCE = re.compile(r"source=(?P<source>.+?), accessed_by=")


def _user_line(body: str, user_file: str) -> int | None:
    match = LOCATION.search(body)
    if match and is_user_file(match["file"], user_file):
        return int(match["line"])
    return None


def parse_guards(text: str, user_file: str) -> tuple[list[dict], list[int | None]]:
    """Leaf guards with their guarded source, plus the user line of every text line."""
    sources: dict[int, str] = {}
    guards, src_lines = [], []
    for line in text.split("\n"):
        match = TREE_LINE.match(line)
        user_line = _user_line(line, user_file) if match else None
        src_lines.append(user_line)
        if not match:
            continue
        depth = len(match["depth"]) // 2
        manager = MANAGER_SOURCE.search(match["body"])
        if manager:
            sources[depth] = manager["source"]
            continue
        if match["kind"] in ("RootGuardManager", "GuardManager", "DictGuardManager"):
            continue
        owner = max((d for d in sources if d < depth), default=None)
        code = LOCATION.sub("", match["body"]).split("  # ")[0].rstrip()
        guards.append({"kind": match["kind"], "code": code, "line": user_line,
                       "source": sources.get(owner) if owner is not None else None})
    return guards, src_lines


def extract(compile_records) -> dict:
    record = compile_records.first("dynamo_cpp_guards_str")
    if record is None:
        return {}
    text = (record["payload"] or "").strip("\n")
    guards, src_lines = parse_guards(text, compile_records.user_file)
    spec = SPECS[0]
    stage = artifact(spec.name, compile_records.compile_id, spec.title, spec.language, text,
                     src_lines)
    stage["guards"] = guards
    return {"guards": stage}
