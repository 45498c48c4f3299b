"""Stages `core_aten` and `prims`: the Dynamo graph re-traced with make_fx.

These are *views* of the captured graph, not what Inductor executed: Inductor uses its own
decomposition table and never lowers through prims. Re-tracing uses fake tensors shaped like the
example inputs, so it costs no real compute; symbolic sizes are specialised to their hints.
"""

from __future__ import annotations

from .common import artifact, fx_src_lines

STAGES = ("core_aten", "prims")
VIEW_NOTE = ("# View: the Dynamo graph re-traced by torchbolt with make_fx and {table}.\n"
             "# Not what Inductor executed; symbolic sizes are specialised to the example inputs.\n")


def extract(compile_records) -> dict:
    out = {}
    for stage, table in (("core_aten", "the Core ATen decomposition table"),
                         ("prims", "torch._prims TorchRefsMode")):
        record = compile_records.first(stage)
        if record is None:
            continue
        text = VIEW_NOTE.format(table=table) + (record["payload"] or "")
        title = "Core ATen (view)" if stage == "core_aten" else "Prims (view)"
        out[stage] = artifact(stage, compile_records.compile_id, title, "python", text,
                              fx_src_lines(text, compile_records.user_file))
        out[stage]["view"] = True
    return out
