"""Kernel attribution of a backward (issue 44, matching limits): an op eager's autograd ran in the
backward goes to the backward kernels Inductor wrote for the user line of its forward op, tied
to that op by the profiler's sequence numbers (the forward op records the number of the
autograd node it makes, and the backward's `autograd::engine::evaluate_function` range carries
it), not by its name: Inductor decomposes `gelu_backward`, so no backward node bears its name.
"""

from __future__ import annotations

import torch

from compiler_core.runtime.measure.attribution import cpu_units
from test_attribution import GELU_LINE, SCRIPT as FORWARD_SCRIPT

# test_attribution's module, its call run backward too
SCRIPT = FORWARD_SCRIPT.replace("m(torch.randn(8, 16))\n", "m(torch.randn(8, 16)).sum().backward()\n")


def test_a_decomposed_backward_op_goes_to_the_backward_kernel_of_its_forward_line(kept_runs):
    _, quiet = kept_runs(SCRIPT, "backward_attribution.py")
    (timing,) = quiet["timings"]
    assert timing["mode"] == "forward+backward"
    rows = timing["attribution"]["rows"]
    where = {op["op"]: (row, op) for row in rows for op in row["eager_ops"]}
    row, op = where["aten::gelu_backward"]
    assert op["matched"] == "backward line" and op["node"] == "gelu"
    assert row["kind"] == "cpp" and row["source"][0]["graph"] == "backward"
    assert GELU_LINE in row["lines"]
    # the forward's ops are matched in order: the backward's aten::mul no longer counts as one
    forward_mul = [o for r in rows for o in r["eager_ops"]
                   if o["op"] == "aten::mul" and o.get("matched") == "order"]
    assert len(forward_mul) == 1
    eager_only = [r for r in rows if r["kind"] == "eager only"]
    assert not any(o["op"] == "aten::gelu_backward" for r in eager_only for o in r["eager_ops"])


def test_backward_units_name_the_forward_op_that_made_their_autograd_node():
    fc = torch.nn.Linear(16, 16)
    x = torch.randn(8, 16)

    def step():
        torch.nn.functional.gelu(fc(x)).sum().backward()
    step()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            step()
    units = {(u["name"], u["occurrence"]): u for u in cpu_units(
        prof.events(), 3, lambda e: e.name, lambda name: name.startswith("aten::"))}
    assert units[("aten::gelu_backward", 0)]["forward"] == {"name": "aten::gelu", "occurrence": 0}
    assert units[("aten::mm", 0)]["forward"] == {"name": "aten::linear", "occurrence": 0}
    assert "forward" not in units[("aten::gelu", 0)]
