"""Stages `core_aten` and `prims`: the Dynamo graph re-traced with make_fx.

These are *views* of the captured graph, not what Inductor executed: Inductor uses its own
decomposition table and never lowers through prims. Re-tracing uses fake tensors shaped like the
example inputs, so it costs no real compute; symbolic sizes are specialised to their hints.
"""

from __future__ import annotations

from .spec import Feature, Part, payload_stage, record

TABLES = {"core_aten": "the Core ATen decomposition table", "prims": "torch._prims TorchRefsMode"}
VIEW_NOTE = ("# View: the Dynamo graph re-traced by torchbolt with make_fx and {table}.\n"
             "# Not what Inductor executed; symbolic sizes are specialised to the example inputs.\n")
# The job re-traces each Dynamo graph (compiler_core/runtime/views.py) and records the views.
SPECS = tuple(payload_stage(name, f"{label} (view)", f"{label} (view)", name, option="views",
                            heading=VIEW_NOTE.format(table=TABLES[name]))
              for name, label in (("core_aten", "Core ATen"), ("prims", "Prims")))


# PyTorch's exceptions for what a trace with fake tensors cannot do, in words (the type names
# torch 2.11-2.15 raise from make_fx: torch.fx.experimental.symbolic_shapes and
# torch._subclasses.fake_tensor).
WHY = {
    "GuardOnDataDependentSymNode": "the graph depends on a tensor's value (a branch or a size "
                                   "read from data), which fake tensors do not have",
    "DataDependentOutputException": "an op's result depends on a tensor's value, which fake "
                                    "tensors do not have",
    "DynamicOutputShapeException": "an op's output shape depends on a tensor's value, which "
                                   "fake tensors do not have",
    "UnsupportedOperatorException": "an op has no implementation for fake tensors",
}


def failure_reason(stage: str, message: str) -> str:
    """Why a view is missing, in words, from PyTorch's error (`Type: message`)."""
    kind = message.split(":", 1)[0].strip()[:100]
    why = WHY.get(kind, f"PyTorch raised {kind}")
    label = next(spec.label for spec in SPECS if spec.name == stage).removesuffix(" (view)")
    return (f"PyTorch's make_fx could not re-trace this graph for the {label} view "
            f"({TABLES[stage]}): {why}. Only this view is missing; the compile's own stages are "
            "unaffected.")


def explain_failures(run) -> None:
    """Each view that failed to trace gets its `reason` beside PyTorch's error in `stage_errors`
    (the job recorded the error; the pane shows the reason in the stage's place)."""
    for error in run.result["stage_errors"]:
        if error["step"] in TABLES and error["compile_id"] is not None:
            error["reason"] = failure_reason(error["step"], error["message"])


def mark_views(group, compiled: dict) -> None:
    """The views say they are views (the page marks them so)."""
    for name in TABLES:
        if name in compiled["stages"]:
            compiled["stages"][name]["view"] = True


# The views are traced after the script, by the runner (`CaptureSession.emit_views`), from the
# graphs the dynamo feature's attachment keeps.
FEATURE = Feature("decomp", records=(record("core_aten"), record("prims")), stages=SPECS,
                  compile_parts=(Part(None, mark_views, name="views"),),
                  run_parts=(Part(None, explain_failures, name="view failures"),))
