"""`kernels`: one entry per kernel in Inductor's output modules, with the nodes it came from.

Kernels are read from the output code Inductor generated (`NAME = async_compile.KIND(...)` for
C++ and Triton kernels, `extern_kernels.NAME(` calls for library kernels such as mm,
`torch.ops.aten.OP.OVERLOAD(` calls for ATen fallbacks such as sort). Their nodes
come from Inductor's provenance tracking artifact (`cppCodeToPost`, keyed `kernel:N`, used for
both C++ and Triton kernels), or where that is empty (torch 2.13 leaves a lazily compiled
backward's empty), the nodes the kernel's lines were written for (`kernel_lines` records), and
`postToPre` (post-grad node -> Dynamo graph node); user lines
come from `inductor_provenance_tracking_kernel_stack_traces`.
"""

from __future__ import annotations

import json
import re

from ..parsers import provenance
from ..parsers.common import graph_label, user_lines
from .spec import Feature, Part, Stage, record

# The Kernels stage: a compile's `kernels` as one text, each kernel with its nodes, and their
# list; built once the run's timings are in (features/kernels_stage.py).
SPECS = (Stage("kernels", "Kernels", "Generated kernels", "python", view="kernels"),)

DEFINITION = re.compile(r"^(?P<name>\w+) = async_compile\.(?P<fn>\w+)\(", re.M)
EXTERN_CALL = re.compile(r"\bextern_kernels\.(?P<name>\w+)\(")
# An ATen op the output code calls itself, with no kernel of its own (a fallback: `buf1 =
# torch.ops.aten.sort.stable(buf0, ...)`), keyed `torch.ops.aten.sort.stable:N` in provenance
FALLBACK_CALL = re.compile(r"^[ \t]+\w+ = (?P<name>torch\.ops\.aten\.\w+\.\w+)\(", re.M)
TRIPLE_QUOTED = re.compile(r"'''(?P<body>.*?)'''", re.S)


def _kind(fn: str) -> str:
    return "triton" if fn == "triton" else "cpp" if fn.startswith("cpp") else fn


def parse_kernels(code: str) -> list[dict]:
    """Kernels defined or called in one output module, in order of appearance."""
    kernels = []
    for match in DEFINITION.finditer(code):
        body = TRIPLE_QUOTED.search(code, match.end())
        kernels.append({"name": match["name"], "kind": _kind(match["fn"]),
                        "source": body["body"].strip("\n") if body else ""})
    for name in dict.fromkeys(m["name"] for m in EXTERN_CALL.finditer(code)):
        kernels.append({"name": f"extern_kernels.{name}", "kind": "extern", "source": ""})
    for name in dict.fromkeys(m["name"] for m in FALLBACK_CALL.finditer(code)):
        kernels.append({"name": name, "kind": "fallback", "source": ""})
    return kernels


def _nth(compile_records, name: str, index: int):
    """The index-th record of `name` of a compile: one per output module, in module order."""
    records = compile_records.all(name)
    return records[index] if index < len(records) else None


def module_provenance(compile_records, index: int) -> tuple[dict, dict]:
    """The index-th node mapping and kernel stack traces (one per output module)."""
    def nth(name):
        record = _nth(compile_records, name, index)
        # empty where Inductor's FX graph cache hit (PyTorch logs the artifact, no payload)
        return json.loads(record["payload"]) if record and record["payload"] else {}
    return (nth("inductor_provenance_tracking_node_mappings"),
            nth("inductor_provenance_tracking_kernel_stack_traces"))


def _keys_for(name: str, mapping: dict) -> list[str]:
    return [key for key in mapping if key.rsplit(":", 1)[0] == name]


def label(name: str, graph: str | None) -> str:
    """How stages name a kernel: its name, and "(backward)" for a backward graph's."""
    return f"{name} (backward)" if graph == "backward" else name


def describe(kernel: dict, graph: str, mapping: dict, stacks: dict, owners: dict,
             user_file: str) -> dict:
    """A kernel with its nodes and user lines (Inductor's provenance), and the user lines of
    each line of its source (`provenance.source_lines`)."""
    code_to_post = mapping.get("cppCodeToPost", {})
    post_to_pre = mapping.get("postToPre", {})
    keys = _keys_for(kernel["name"], code_to_post)
    written = (owner[0] for entries in owners.get(kernel["name"], {}).values() for owner in entries)
    nodes = list(dict.fromkeys(n for k in keys for n in code_to_post[k])) or list(dict.fromkeys(
        name for name in written if isinstance(name, str)))
    traces = "".join(t for k in _keys_for(kernel["name"], stacks) for t in stacks[k])
    lines = sorted(set(user_lines(traces, user_file)))
    per_line = provenance.source_lines(kernel["source"], owners.get(kernel["name"], {}), lines)
    return {**kernel, "graph": graph, "label": label(kernel["name"], graph), "nodes": nodes,
            "dynamo_nodes": list(dict.fromkeys(p for n in nodes for p in post_to_pre.get(n, []))),
            "lines": lines, **provenance.line_fields(per_line)}


def module_kernels(compile_records, index: int) -> list[dict]:
    """The kernels of the index-th output module of a compile."""
    record = compile_records.all("inductor_output_code")[index]
    mapping, stacks = module_provenance(compile_records, index)
    owners = _nth(compile_records, "kernel_lines", index)
    graph = graph_label(record["payload"], index)
    return [describe(kernel, graph, mapping, stacks, owners["meta"]["kernels"] if owners else {},
                     compile_records.user_file)
            for kernel in parse_kernels(record["payload"] or "")]


def extract_kernels(compile_records) -> list[dict]:
    return [kernel for index in range(len(compile_records.all("inductor_output_code")))
            for kernel in module_kernels(compile_records, index)]


def preview_kernels(preview: dict, user_file: str) -> list[dict]:
    """The GPU preview's Triton kernels (see `runtime.gpu.preview`), described as above from the
    preview's own provenance and line owners."""
    graph = graph_label(preview["output_code"], 0)
    recorded = preview.get("provenance") or {}
    mapping, stacks = recorded.get("node_mappings", {}), recorded.get("stacks", {})
    owners = {k["name"]: k.get("owners", {}) for k in preview["kernels"]}
    parsed = {k["name"]: k for k in parse_kernels(preview["output_code"])}
    return [describe(parsed[k["name"]], graph, mapping, stacks, owners, user_file)
            for k in preview["kernels"] if k["name"] in parsed]


FEATURE = Feature(
    "kernels", records=(record("kernel_lines"),), stages=SPECS,
    attach=("runtime.line_owners:attach",),
    compile_parts=(Part("kernels", lambda group, compiled: extract_kernels(group), []),))
