"""A training compile's `saved_activations`: what AOTAutograd's partitioner saved for the
backward, and what the backward recomputes instead.

Source: the forward and backward graphs the partitioner returned, as PyTorch printed them
(`aot_forward_graph`, `aot_backward_graph`). AOTAutograd labels each forward output with its
descriptor (torch 2.11-2.14): `SavedForBackwardsAOTOutput(idx=N)` marks a value saved for the
backward, `PlainAOTOutput` a user output; a forward whose outputs are all user outputs saves
nothing (`(x * 2).sum()`: its backward needs only the gradient). The partitioner copies
joint-graph nodes into both graphs under their joint names, so an op named in both graphs is one
the backward recomputes; its own debug count (`# remat/fw/bw`, `AOT_PARTITIONER_DEBUG` in
torch/_functorch/partitioners.py) is defined the same way. Sizes are the printed types: bytes are
numel times the element size, as the partitioner's `_size_of` counts a tensor (null for a
symbolic size).
"""

from __future__ import annotations

import math

from ..parsers.fxgraph import parse_graphs
from .spec import Feature, Part

SAVED_OUTPUT = "SavedForBackwardsAOTOutput("
AOT_OUTPUT = "AOTOutput("  # any output descriptor: with none saved, the forward saves nothing
ITEM_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int8": 1, "int16": 2,
              "int32": 4, "int64": 8, "uint8": 1, "bool": 1, "complex64": 8, "complex128": 16}
VALUES_PER_LIST = 2000


def _bytes(node: dict) -> int | None:
    shape, size = node["shape"], ITEM_BYTES.get(node["dtype"])
    if shape is None or size is None or not all(d.isdecimal() for d in shape):
        return None
    return math.prod(int(d) for d in shape) * size


def _value(node: dict) -> dict:
    return {"name": node["name"], "op": node["target"] if node["op"] != "placeholder" else None,
            "input": node["op"] == "placeholder", "shape": node["shape"], "dtype": node["dtype"],
            "bytes": _bytes(node), "lines": [node["line"]] if node["line"] else []}


def saved_names(text: str) -> list[str]:
    """The outputs printed `name,  # SavedForBackwardsAOTOutput(idx=N)`, in order (string
    search: the text comes from the job)."""
    names = []
    for line in text.split("\n"):
        code, _, comment = line.partition("#")
        name = code.strip().rstrip(",").strip()
        if comment.strip().startswith(SAVED_OUTPUT) and name.isidentifier():
            names.append(name)
    return list(dict.fromkeys(names))


def _graph_nodes(artifact: dict) -> dict[str, dict]:
    """The nodes of the artifact's outer graph (nested subgraphs print after it)."""
    graphs = parse_graphs(artifact["text"], artifact.get("src_lines") or [])
    return graphs[0].nodes if graphs else {}


def saved_activations(stages: dict) -> dict | None:
    """`{"saved", "recomputed", "saved_bytes", "dropped"}` of a compile with a backward graph,
    else None; `saved` is empty where the forward saves nothing."""
    forward, backward = stages.get("aot_forward"), stages.get("aot_backward")
    if forward is None or backward is None:
        return None
    names = saved_names(forward["text"])
    if not names and AOT_OUTPUT not in forward["text"]:
        raise ValueError("the forward graph prints no AOT output descriptors, so what it saves "
                         "for the backward is unknown")
    fw_nodes, bw_nodes = _graph_nodes(forward), _graph_nodes(backward)
    saved = [_value(fw_nodes[name]) for name in names if name in fw_nodes]
    computed = {name for name, node in fw_nodes.items() if node["op"] == "call_function"}
    recomputed = [_value(node) for name, node in bw_nodes.items()
                  if node["op"] == "call_function" and name in computed]
    dropped = max(0, len(saved) - VALUES_PER_LIST) + max(0, len(recomputed) - VALUES_PER_LIST)
    return {"saved": saved[:VALUES_PER_LIST], "recomputed": recomputed[:VALUES_PER_LIST],
            "saved_bytes": sum(v["bytes"] or 0 for v in saved), "dropped": dropped}


FEATURE = Feature("saved_activations", compile_parts=(
    Part("saved_activations", lambda group, compiled: saved_activations(compiled["stages"])),))
