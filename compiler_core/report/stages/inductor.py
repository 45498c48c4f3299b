"""Stages `post_grad_graph`, `ir_pre_fusion`, `ir_post_fusion`, `output_code`: Inductor's work.

Inductor compiles each AOT graph separately (forward, backward, or inference), so a compile id can
hold several of each; they are joined into one text with a labelled section per graph. The label
comes from the `# AOT ID: ['0_forward']` header of the matching output module. The post-grad
graph also gets `modules`, each node's module stack by node id (as `report.fxgraph` names them).
"""

from __future__ import annotations

import re

from .common import artifact, fx_src_lines, join_sections
from .spec import Stage

SPECS = (
    Stage("post_grad_graph", "Inductor post-grad graph", "Inductor post-grad graph", "python",
          records=("inductor_post_grad_graph",), graph=True),
    Stage("ir_pre_fusion", "Loop IR before fusion", "Loop-level IR before fusion", "text",
          records=("ir_pre_fusion",)),
    Stage("ir_post_fusion", "Loop IR after fusion", "Loop-level IR after fusion", "text",
          records=("ir_post_fusion",)),
    Stage("output_code", "Generated code", "Generated code (Inductor output module)", "python",
          records=("inductor_output_code",)),
)
AOT_ID = re.compile(r"# AOT ID: \['\d+_(?P<kind>\w+)'\]")


def graph_labels(compile_records) -> list[str]:
    """forward / backward / inference, one per output module, in compile order."""
    labels = []
    for record in compile_records.all("inductor_output_code"):
        match = AOT_ID.search(record["payload"] or "")
        labels.append(match["kind"] if match else f"graph {len(labels)}")
    return labels


def node_modules(records: list[dict], labels: list[str]) -> dict[str, list]:
    """Node id -> module stack, from the table the capture attached to each post-grad graph."""
    prefixes = [f"{label}:" if len(records) > 1 else "" for label in labels]
    return {prefix + name: stack for prefix, record in zip(prefixes, records)
            for name, stack in (record["meta"].get("modules") or {}).items()}


def extract(compile_records) -> dict:
    labels = graph_labels(compile_records)
    out = {}
    for spec in SPECS:
        stage, title, language = spec.name, spec.title, spec.language
        records = compile_records.all(spec.records[0])
        if not records:
            continue
        parts = [(labels[i] if i < len(labels) else f"graph {i}", r["payload"] or "")
                 for i, r in enumerate(records)]
        text, sections = join_sections(parts)
        src_lines = fx_src_lines(text, compile_records.user_file) if language == "python" else None
        out[stage] = artifact(stage, compile_records.compile_id, title, language, text,
                              src_lines, sections)
        if stage == "post_grad_graph":
            out[stage]["modules"] = node_modules(records, [label for label, _ in parts])
    return out
