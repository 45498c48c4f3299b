"""`kernels`: one entry per kernel in Inductor's output modules, with the nodes it came from.

Kernels are read from the output code Inductor generated (`NAME = async_compile.KIND(...)` for
C++ and Triton kernels, `extern_kernels.NAME(` calls for library kernels such as mm). Their nodes
come from Inductor's provenance tracking artifact (`cppCodeToPost`, keyed `kernel:N`, used for
both C++ and Triton kernels) and `postToPre` (post-grad node -> Dynamo graph node); user lines
come from `inductor_provenance_tracking_kernel_stack_traces`.
"""

from __future__ import annotations

import json
import re

from .common import user_lines
from .inductor import graph_labels
from .spec import Stage

# A compile's `kernels` list; the page shows it as one text, each kernel with its nodes.
SPECS = (Stage("kernels", "Kernels", "Generated kernels", "python", field="kernels"),)

DEFINITION = re.compile(r"^(?P<name>\w+) = async_compile\.(?P<fn>\w+)\(", re.M)
EXTERN_CALL = re.compile(r"\bextern_kernels\.(?P<name>\w+)\(")
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
    return kernels


def _provenance(compile_records, index: int) -> tuple[dict, dict]:
    """The index-th node mapping and kernel stack traces (one per output module)."""
    def nth(name):
        records = compile_records.all(name)
        return json.loads(records[index]["payload"]) if index < len(records) else {}
    return (nth("inductor_provenance_tracking_node_mappings"),
            nth("inductor_provenance_tracking_kernel_stack_traces"))


def _keys_for(name: str, mapping: dict) -> list[str]:
    return [key for key in mapping if key.rsplit(":", 1)[0] == name]


def extract_kernels(compile_records) -> list[dict]:
    labels = graph_labels(compile_records)
    kernels = []
    for index, record in enumerate(compile_records.all("inductor_output_code")):
        mapping, stacks = _provenance(compile_records, index)
        code_to_post = mapping.get("cppCodeToPost", {})
        post_to_pre = mapping.get("postToPre", {})
        for kernel in parse_kernels(record["payload"] or ""):
            keys = _keys_for(kernel["name"], code_to_post)
            nodes = list(dict.fromkeys(n for k in keys for n in code_to_post[k]))
            traces = "".join(t for k in _keys_for(kernel["name"], stacks) for t in stacks[k])
            lines = sorted(set(user_lines(traces, compile_records.user_file)))
            kernel.update(graph=labels[index], nodes=nodes,
                          dynamo_nodes=list(dict.fromkeys(p for n in nodes
                                                          for p in post_to_pre.get(n, []))),
                          lines=lines)
            kernels.append(kernel)
    return kernels
