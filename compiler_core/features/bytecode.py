"""Stages `bytecode_original` / `bytecode_transformed`: every frame Dynamo intercepted.

`dis` listings always; decompiled Python (depyf) where decompilation worked, else a note with
the decompiler's error (depyf has no handlers for some newer Pythons' opcodes).
"""

from __future__ import annotations

import re

from ..parsers.common import artifact, is_user_file
from .spec import TEXT, Feature, Stage, record

# One `bytecode` record holds both; it announces the transformed code, the part Dynamo wrote.
SPECS = (Stage("bytecode_original", "Bytecode: original", "Original bytecode", "pycon",
               view="bytecode"),
         Stage("bytecode_transformed", "Bytecode: transformed", "Transformed bytecode", "pycon",
               records=("bytecode",), view="bytecode"))
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


def decompile_note(why: str | None) -> str:
    """What the pane says where it has no Python source: the decompiler's own error."""
    return (f"no Python source: the decompiler failed ({why or 'no reason given'}); "
            "the dis listing is the bytecode itself")


def extract(compile_records) -> dict:
    record = compile_records.first("bytecode")
    if record is None:
        return {}
    meta = record["meta"]
    mapped = is_user_file(meta["filename"], compile_records.user_file)
    out = {}
    for spec, kind in zip(SPECS, ("original", "transformed")):
        stage, text = spec.name, meta[kind]
        out[stage] = artifact(stage, compile_records.compile_id,
                              f"{spec.title}: {meta['name']}", spec.language, text,
                              dis_src_lines(text, mapped))
        source = meta.get(f"{kind}_source")
        out[stage]["source"] = source
        out[stage]["source_note"] = None if source else decompile_note(
            meta.get(f"{kind}_source_error"))
    return out


FEATURE = Feature("bytecode", records=(record("bytecode", name=TEXT, filename=TEXT),),
                  stages=SPECS, attach=("runtime.capture:attach_bytecode",), extract=extract)
