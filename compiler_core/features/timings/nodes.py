"""What the kernel attribution reads of a compile (`attribution.py`): the op each Dynamo graph
node calls, with its user line; and the name both sides give an op (`op_key`), eager's profile
(`aten::relu_`) and Dynamo's graph (`relu`).
"""

from __future__ import annotations

from ...parsers.fxgraph import stage_nodes

ALIASES = {"iadd": "add", "imul": "mul", "isub": "sub", "itruediv": "div", "truediv": "div",
           "floordiv": "floor_divide", "imatmul": "matmul", "mod": "remainder"}
# Tensor methods an eager profile records as `aten::to` (`x.float()`; its `aten::_to_copy` inside)
CASTS = {"float", "double", "half", "bfloat16", "int", "long", "short", "bool", "byte", "char",
         "cpu", "cuda", "type"}


def op_key(name: str) -> str:
    """An op's name as both sides can share it: `aten::relu_` and Dynamo's `relu` as `relu`."""
    name = name.removeprefix("aten::")
    name = ALIASES.get(name, name)
    return name.rstrip("_") or name


def node_op(kind: str, target: str) -> str:
    """The op a Dynamo graph node calls, from its node table's `op` and `target` (`sin`,
    operator `mul`, method `float`, a compiled autograd graph's `mul.Tensor`)."""
    return "to" if kind == "call_method" and target in CASTS else op_key(target.split(".")[0])


def dynamo_nodes(stage: dict) -> list[tuple[str, str, int | None]]:
    """(node, op, user line) of each call in a Dynamo graph stage, in graph order, from the node
    table the engine took from the live graph (`stage_nodes`)."""
    if not stage:
        return []
    return [(row["name"], node_op(row["op"], row["target"]), row["line"])
            for row in stage_nodes(stage) if row["op"] in ("call_function", "call_method")]
