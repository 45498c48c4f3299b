"""Op census per IR level: how many ops each graph stage of a compile holds, and how many of
them are distinct, so the narrowing from Torch IR to ATen, Core ATen and prims can be read off.

An op is a `call_function`, `call_method` or `call_module` node (placeholders, attributes and
the output are not ops). Distinct ops are counted by target: an ATen overload such as
`aten.mm.default`, a torch function, or a method's name.
"""

from __future__ import annotations

from ..parsers.fxgraph import stage_nodes
from .spec import Feature, Part

OPS = ("call_function", "call_method", "call_module")
NAMESPACES = ("aten.", "prims.", "torch.", "operator.", "_operator.")


def op_name(row: dict) -> str:
    """A method call printed on its receiver (`l_x_.sin`) is counted by its method's name."""
    target = row["target"] or ""
    if row["op"] == "call_function" and "." in target and not target.startswith(NAMESPACES):
        return target.rsplit(".", 1)[-1]
    return target


def census(stages: dict, graph_stages: tuple[str, ...]) -> dict[str, dict]:
    out = {}
    for name in graph_stages:
        if name in stages:
            ops = [op_name(row) for row in stage_nodes(stages[name]) if row["op"] in OPS]
            out[name] = {"ops": len(ops), "distinct": len(set(ops))}
    return out


def feature(graph_stages: tuple[str, ...]) -> Feature:
    """The census reads every graph stage: the registry declares it with their names, once the
    stage features are listed."""
    return Feature("census", compile_parts=(
        Part("census", lambda group, compiled: census(compiled["stages"], graph_stages), {}),))
