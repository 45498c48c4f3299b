"""A compile's `fusion`: what Inductor's scheduler fused, and why it refused the rest.

Source: the scheduler's own fusion log, one `fusion_log` record per graph
(runtime/hooks/fusion.py):
"fusing op0 with op1" for each fusion made, and `WhyNoFuse` refusals ("cannot fuse op0 with op7:
no shared data"). Names are scheduler nodes; a fused node is named by its parts joined with "_"
(`FusedSchedulerNode.get_name`). A node's user lines are those of its origin FX nodes (the
graph's `ir_origins` before fusion). The kernel a node ended in is the kernel whose post-grad
nodes (Inductor's provenance, `kernels`) include the node's origins: Inductor names a kernel's
nodes by the origins of the scheduler nodes it generated (`set_kernel_post_grad_provenance_
tracing`). On the CPU, one C++ kernel can hold several scheduler nodes that were not fused, as
separate loop nests. The records come from the job: every field is checked and bounded.
"""

from __future__ import annotations

from ..parsers.common import graph_labels, is_int
from .spec import Feature, Part, record

DECISIONS_PER_COMPILE = 1000
NAME_CHARS = 200
REASON_CHARS = 500
ORIGINS = 8  # post-grad nodes named per scheduler node


def _origins(meta: dict) -> dict[str, list]:
    """Scheduler node -> `[[post-grad node, user line], ...]` of one `ir_origins` record."""
    ops = meta.get("ops")
    if not isinstance(ops, dict):
        return {}
    return {str(name): [o for o in owners if isinstance(o, list) and len(o) == 2]
            for name, owners in ops.items() if isinstance(owners, list)}


def _parts(name: str, origins: dict) -> list[list]:
    """The origins of a scheduler node, or of the parts of a fused node's name."""
    if name in origins:
        return origins[name]
    return [o for part in name.split("_") for o in origins.get(part, [])]


def _kernel_owners(kernels: list[dict], graph: str) -> dict[str, str]:
    """Post-grad node -> the kernel of `graph` that Inductor's provenance says computes it."""
    owners: dict[str, str] = {}
    for kernel in kernels:
        if kernel.get("graph") == graph:
            for node in kernel.get("nodes", []):
                owners.setdefault(node, kernel["name"])
    return owners


def _kernel_of(origins: list[list], owners: dict[str, str]) -> str | None:
    return next((owners[str(node)] for node, _ in origins if str(node) in owners), None)


def _decision(raw, graph: str, origins: dict, owners: dict) -> dict | None:
    """One decision of the log with its nodes' origins, kernels and user lines; None if
    malformed."""
    if not isinstance(raw, dict) or not isinstance(raw.get("nodes"), list):
        return None
    nodes = [str(name)[:NAME_CHARS] for name in raw["nodes"][:2]]
    found = [_parts(name, origins) for name in nodes]
    kernels = [_kernel_of(parts, owners) for parts in found]
    fused = raw.get("fused") is True
    lines = sorted({line for parts in found for _, line in parts if is_int(line)})
    return {"graph": graph, "nodes": nodes, "fused": fused,
            "reason": str(raw.get("reason", ""))[:REASON_CHARS], "lines": lines,
            "origins": [list(dict.fromkeys(str(node)[:NAME_CHARS] for node, _ in parts))[:ORIGINS]
                        for parts in found],
            "kernels": kernels, "kernel": kernels[0] if fused and kernels else None}


def fusion(compile_records, kernels: list[dict]) -> dict | None:
    """`{"decisions", "rounds": {graph: n}, "dropped"}`, or None for a compile without
    Inductor. The i-th log, `ir_origins` and output module are the i-th graph's."""
    logs = [r["meta"] for r in compile_records.all("fusion_log")]
    if not logs:
        return None
    pre_fusion = [_origins(r["meta"]) for r in compile_records.all("ir_origins")
                  if r["meta"].get("stage") == "ir_pre_fusion"]
    labels = graph_labels(compile_records)
    decisions, rounds, dropped = [], {}, 0
    for index, log in enumerate(logs):
        graph = labels[index] if index < len(labels) else f"graph {index}"
        origins = pre_fusion[index] if index < len(pre_fusion) else {}
        owners = _kernel_owners(kernels, graph)
        raw = log.get("decisions") if isinstance(log.get("decisions"), list) else []
        room = DECISIONS_PER_COMPILE - len(decisions)
        decisions += filter(None, (_decision(d, graph, origins, owners) for d in raw[:room]))
        dropped += max(0, len(raw) - room) + _count(log.get("dropped"))
        rounds[graph] = rounds.get(graph, 0) + _count(log.get("rounds"))
    return {"decisions": decisions, "rounds": rounds, "dropped": dropped}


def _count(value) -> int:
    return value if is_int(value) and value > 0 else 0


FEATURE = Feature(
    "fusion", records=(record("fusion_log"),), attach=("runtime.hooks.fusion:attach",),
    compile_parts=(Part("fusion", lambda group, compiled: fusion(group, compiled["kernels"])),))
