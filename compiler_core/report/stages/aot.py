"""Stages `aot_forward`, `aot_backward`, `aot_joint`, `aot_inference`: AOTAutograd ATen graphs."""

from __future__ import annotations

from .common import artifact, fx_src_lines

EVENTS = {
    "aot_joint": ("aot_joint_graph", "AOTAutograd joint graph (ATen)"),
    "aot_forward": ("aot_forward_graph", "AOTAutograd forward (ATen)"),
    "aot_backward": ("aot_backward_graph", "AOTAutograd backward (ATen)"),
    "aot_inference": ("aot_inference_graph", "AOTAutograd inference (ATen)"),
}
STAGES = tuple(EVENTS)


def extract(compile_records) -> dict:
    out = {}
    for stage, (event, title) in EVENTS.items():
        record = compile_records.first(event)
        if record is not None and record["payload"]:
            text = record["payload"]
            out[stage] = artifact(stage, compile_records.compile_id, title, "python", text,
                                  fx_src_lines(text, compile_records.user_file))
    return out
