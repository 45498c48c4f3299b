"""Stages `bytecode_original` / `bytecode_transformed`: every frame Dynamo intercepted.

`dis` listings always; decompiled Python (depyf) where decompilation worked, else a note.
"""

from __future__ import annotations

import re

from .common import artifact, is_user_file

STAGES = ("bytecode_original", "bytecode_transformed")
DIS_LINE_NUMBER = re.compile(r"^\s*(\d+)\s{2,}")


def dis_src_lines(text: str, mapped: bool) -> list[int | None]:
    """dis prints the source line once, before that line's first instruction."""
    current, out = None, []
    for line in text.split("\n"):
        match = DIS_LINE_NUMBER.match(line)
        if match:
            current = int(match[1])
        out.append(current if mapped and line.strip() else None)
    return out


def extract(compile_records) -> dict:
    record = compile_records.first("bytecode")
    if record is None:
        return {}
    meta = record["meta"]
    mapped = is_user_file(meta["filename"], compile_records.user_file)
    out = {}
    for stage, kind, title in (("bytecode_original", "original", "Original bytecode"),
                               ("bytecode_transformed", "transformed", "Transformed bytecode")):
        text = meta[kind]
        out[stage] = artifact(stage, compile_records.compile_id,
                              f"{title}: {meta['name']}", "pycon", text,
                              dis_src_lines(text, mapped))
        source = meta.get(f"{kind}_source")
        out[stage]["source"] = source
        out[stage]["source_note"] = None if source else "decompilation failed; dis only"
    return out
