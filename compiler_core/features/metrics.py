"""Stage `metrics`: PyTorch's own compilation metrics for the compile id."""

from __future__ import annotations

import json

from ..parsers.common import artifact
from .spec import Feature, Part, Stage, traced

SPECS = (Stage("metrics", "Compilation metrics", "Compilation metrics", "json",
               records=("compilation_metrics",)),)
# The fields a reader wants first; the full dict is kept in `values`.
SUMMARY = ("entire_frame_compile_time_s", "backend_compile_time_s", "inductor_compile_time_s",
           "code_gen_time_s", "guard_count", "shape_env_guard_count", "graph_op_count",
           "graph_node_count", "graph_input_count", "restart_reasons", "fail_type",
           "fail_reason", "non_compliant_ops", "compliant_custom_ops")


def extract(compile_records) -> dict:
    record = compile_records.first("compilation_metrics")
    if record is None:
        return {}
    values = {k: v for k, v in record["meta"].items() if k != "attempt"}
    backward = compile_records.first("bwd_compilation_metrics")
    if backward is not None:
        values["backward"] = {k: v for k, v in backward["meta"].items() if k != "attempt"}
    summary = {k: values[k] for k in SUMMARY if k in values}
    spec = SPECS[0]
    stage = artifact(spec.name, compile_records.compile_id, spec.title, spec.language,
                     json.dumps(summary, indent=2, default=str))
    stage["values"] = values
    return {"metrics": stage}


def explain_guard_counts(stages: dict) -> None:
    """Say on the metrics what their `guard_count` counts beside the Guards pane's list: a room
    saw "guard_count: 10" beside "14 guards" and asked which is right."""
    metrics, guards = stages.get("metrics"), stages.get("guards")
    count = (metrics or {}).get("values", {}).get("guard_count")
    if guards is None or not isinstance(count, int):
        return
    metrics["source_note"] = (
        f"guard_count {count} counts the guards Dynamo installed (PyTorch's CompilationMetrics); "
        f"the Guards pane lists the {len(guards.get('guards', []))} checks of the guard tree "
        "built from them (shape relations and the checks on the way to each value included), "
        "so the two count different things")


def restarts(group) -> list[str]:
    """Why Dynamo restarted its analysis of the frame (e.g. a graph break in an inlined call),
    each time: the `restart_reasons` of every attempt's metrics, as tlparse's
    failures_and_restarts page counts them (in an older torch's TORCH_TRACE log, where a graph
    break has no `dynamo_graph_break_reason`, these are its only trace)."""
    listed = [r["meta"].get("restart_reasons") for r in group.all("compilation_metrics")]
    return [str(reason) for reasons in listed if isinstance(reasons, list) for reason in reasons]


FEATURE = Feature(
    "metrics", records=(traced("compilation_metrics"), traced("bwd_compilation_metrics")),
    stages=SPECS, extract=extract,
    compile_parts=(Part(None, lambda group, compiled: explain_guard_counts(compiled["stages"]),
                        name="guard_counts"),
                   Part("restarts", lambda group, compiled: restarts(group), [])))
