"""Stages `aot_forward`, `aot_backward`, `aot_joint`, `aot_inference`: AOTAutograd ATen graphs."""

from __future__ import annotations

from ..parsers.common import artifact, fx_src_lines
from .spec import Feature, Stage, record

SPECS = tuple(
    Stage(f"aot_{part}", label, f"AOTAutograd {title}", "python", records=(f"aot_{part}_graph",),
          graph=True)
    for part, label, title in (("joint", "AOT joint graph", "joint graph (ATen)"),
                               ("forward", "AOT forward (ATen)", "forward (ATen)"),
                               ("backward", "AOT backward (ATen)", "backward (ATen)"),
                               ("inference", "AOT inference (ATen)", "inference (ATen)")))


def extract(compile_records) -> dict:
    out = {}
    for spec in SPECS:
        record = compile_records.first(spec.records[0])
        if record is not None and record["payload"]:
            text = record["payload"]
            out[spec.name] = artifact(spec.name, compile_records.compile_id, spec.title,
                                      spec.language, text,
                                      fx_src_lines(text, compile_records.user_file))
    return out


FEATURE = Feature("aot", records=tuple(record(spec.records[0]) for spec in SPECS), stages=SPECS,
                  extract=extract)
