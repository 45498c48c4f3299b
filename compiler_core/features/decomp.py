"""Stages `core_aten` and `prims`: the Dynamo graph re-traced with make_fx.

These are *views* of the captured graph, not what Inductor executed: Inductor uses its own
decomposition table and never lowers through prims. Re-tracing uses fake tensors shaped like the
example inputs, so it costs no real compute; symbolic sizes are specialised to their hints.
"""

from __future__ import annotations

from ..parsers.common import artifact, fx_src_lines
from .spec import Feature, Stage, record

# The job re-traces each Dynamo graph (compiler_core/runtime/views.py) and records the views.
SPECS = (Stage("core_aten", "Core ATen (view)", "Core ATen (view)", "python",
               records=("core_aten",), graph=True, option="views"),
         Stage("prims", "Prims (view)", "Prims (view)", "python", records=("prims",), graph=True,
               option="views"))
TABLES = {"core_aten": "the Core ATen decomposition table", "prims": "torch._prims TorchRefsMode"}
VIEW_NOTE = ("# View: the Dynamo graph re-traced by torchbolt with make_fx and {table}.\n"
             "# Not what Inductor executed; symbolic sizes are specialised to the example inputs.\n")


def extract(compile_records) -> dict:
    out = {}
    for spec in SPECS:
        record = compile_records.first(spec.records[0])
        if record is None:
            continue
        text = VIEW_NOTE.format(table=TABLES[spec.name]) + (record["payload"] or "")
        out[spec.name] = artifact(spec.name, compile_records.compile_id, spec.title,
                                  spec.language, text,
                                  fx_src_lines(text, compile_records.user_file))
        out[spec.name]["view"] = True
    return out


# The views are traced after the script, by the runner (`CaptureSession.emit_views`), from the
# graphs the dynamo feature's attachment keeps.
FEATURE = Feature("decomp", records=(record("core_aten"), record("prims")), stages=SPECS,
                  extract=extract)
