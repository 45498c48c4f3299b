"""Stages `post_grad_graph`, `ir_pre_fusion`, `ir_post_fusion`, `output_code`: Inductor's work.

Inductor compiles each AOT graph separately (forward, backward, or inference), so a compile id can
hold several of each; they are joined into one text with a labelled section per graph. The label
comes from the `# AOT ID: ['0_forward']` header of the matching output module. The loop IR's lines
map to the user lines of each op's origin nodes (`ir_origins` records); the output module's
kernels line by line and its launches to theirs (`compiler_core.parsers.provenance`). The post-grad
graph also gets `modules`, each node's module stack by node id (as `parsers.fxgraph` names them).
"""

from __future__ import annotations

import json

from ..parsers import nodelinks, provenance
from ..parsers.common import artifact, fx_src_lines, graph_labels, join_sections, user_lines
from .kernels import module_kernels, module_provenance
from .spec import ARTIFACT, EVENT, OBJECT, TEXT, Feature, Stage, record, traced

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


def ir_line_map(compile_records, stage: str, texts: list[str]) -> list[list]:
    """Per graph: each IR line's user lines, from the origins of the op it belongs to."""
    origins = [r["meta"]["ops"] for r in compile_records.all("ir_origins")
               if r["meta"]["stage"] == stage]
    return [provenance.ir_lines(text, origins[i] if i < len(origins) else {})
            for i, text in enumerate(texts)]


def module_map(code: str, kernels: list[dict], stacks: dict, user_file: str) -> tuple:
    """One output module's per-line user lines and kernel_src keys."""
    by_name = {k["name"]: {"map": provenance.unpack(k), "lines": k["lines"], "label": k["label"]}
               for k in kernels if k["source"]}
    stack_lines = {key: sorted(set(user_lines("".join(traces), user_file)))
                   for key, traces in stacks.items()}
    return provenance.module_lines(code, by_name, stack_lines)


def output_code_map(compile_records, texts: list[str]) -> tuple[list, list]:
    maps, keys = [], []
    for index, text in enumerate(texts):
        stacks = compile_records.all("inductor_provenance_tracking_kernel_stack_traces")
        stack = json.loads(stacks[index]["payload"] or "{}") if index < len(stacks) else {}
        per_line, line_keys = module_map(text, module_kernels(compile_records, index), stack,
                                         compile_records.user_file)
        maps.append(per_line)
        keys.append(line_keys)
    return maps, keys


def node_modules(records: list[dict], labels: list[str]) -> dict[str, list]:
    """Node id -> module stack, from the table the capture attached to each post-grad graph."""
    prefixes = [f"{label}:" if len(records) > 1 else "" for label in labels]
    return {prefix + name: stack for prefix, record in zip(prefixes, records)
            for name, stack in (record["meta"].get("modules") or {}).items()}


def node_origins(compile_records, records: list[dict], labels: list[str]) -> dict:
    """`graph_labels` (one per graph) and `origins` (`label:name` -> its Dynamo nodes, see
    `parsers.nodelinks`) of the post-grad graphs."""
    mappings = [module_provenance(compile_records, index)[0].get("postToPre")
                for index in range(len(records))]
    seq_nrs = [record["meta"].get("seq_nrs") for record in records]
    return {"graph_labels": labels,
            "origins": nodelinks.post_grad_origins(labels, mappings, seq_nrs)}


def extract(compile_records) -> dict:
    labels = graph_labels(compile_records)
    out = {}
    for spec in SPECS:
        stage, title, language = spec.name, spec.title, spec.language
        records = compile_records.all(spec.records[0])
        if not records:
            continue
        texts = [r["payload"] or "" for r in records]
        parts = [(labels[i] if i < len(labels) else f"graph {i}", t) for i, t in enumerate(texts)]
        text, sections = join_sections(parts)
        out[stage] = artifact(stage, compile_records.compile_id, title, language, text,
                              sections=sections)
        if stage == "post_grad_graph":
            out[stage]["src_lines"] = fx_src_lines(text, compile_records.user_file)
            out[stage]["modules"] = node_modules(records, [label for label, _ in parts])
            out[stage].update(node_origins(compile_records, records, [label for label, _ in parts]))
        elif stage == "output_code":
            maps, keys = output_code_map(compile_records, texts)
            provenance.attach(out[stage], provenance.place(maps, sections, []),
                              provenance.place(keys, sections, None))
        else:
            provenance.attach(out[stage], provenance.place(
                ir_line_map(compile_records, stage, texts), sections, []))
    return out


FEATURE = Feature(
    "inductor",
    # the post-grad graph is an event, not an artifact, where Inductor's FX graph cache hit
    records=(traced("inductor_post_grad_graph", EVENT, ARTIFACT), record("ir_pre_fusion"),
             record("ir_post_fusion"), record("ir_origins", stage=TEXT, ops=OBJECT),
             traced("inductor_output_code"),
             traced("inductor_provenance_tracking_node_mappings", ARTIFACT),
             traced("inductor_provenance_tracking_kernel_stack_traces", ARTIFACT)),
    stages=SPECS, attach=("runtime.capture:attach_ir_loggers",
                          "runtime.capture:attach_post_grad_modules"),
    extract=extract)
