"""Kernel attribution of a cast (issue 44): eager runs `x.float()` as `aten::to` (which calls
`aten::_to_copy`), Dynamo's graph holds it as a `float` method call and Inductor fuses it into a
kernel; the cast goes to that kernel, matched in order like any other op, not to the eager work
no kernel accounts for.
"""

from __future__ import annotations

from compiler_core.features.timings.nodes import node_op

CASTS = ("float", "double", "half", "bfloat16", "int", "long", "short", "bool", "byte", "char",
         "to", "cpu", "type")

SCRIPT = """import torch


def f(x):
    return x.float().sin() + 1


torch.compile(f)(torch.randn(8, 16, dtype=torch.float64))
"""


def test_a_cast_goes_to_the_kernel_that_replaced_it(kept_runs):
    _, quiet = kept_runs(SCRIPT, "cast_attribution.py")
    (timing,) = quiet["timings"]
    rows = timing["attribution"]["rows"]
    where = {op["op"]: (row, op) for row in rows for op in row["eager_ops"]}
    row, op = where["aten::to"]
    assert row["kind"] == "cpp" and op["matched"] == "order" and op["node"] == "float_1"
    assert sorted(o["op"] for o in row["eager_ops"]) == ["aten::add", "aten::sin", "aten::to"]


def test_the_casting_methods_are_read_as_eagers_op():
    """Each of these Tensor methods is recorded as `aten::to` in an eager profile (checked in a
    plain process's profile, torch 2.15, CPU); the builtin `int(s0)` on a size is no cast."""
    for method in CASTS:
        assert node_op("call_method", method) == "to", method
    assert node_op("call_function", "int") == "int"
