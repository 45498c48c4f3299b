"""Kernel attribution (issue 44) on a CPU: each compiled kernel's row names the eager ATen ops
it replaced (Inductor's provenance joined with the eager profile), and the rows add up to what
the profiles and the clocks measured.

One job (tiny shapes) through the worker, its records kept (`kept_runs`, tests/conftest.py);
the join is checked on its records rebuilt without the withholding that a busy machine causes:
the join's arithmetic does not depend on how busy the machine was, only the figures' meaning.
"""

from __future__ import annotations

import pytest
import torch
from torch.utils.benchmark import Timer

from compiler_core.features.timings.nodes import dynamo_nodes, node_op
from compiler_core.features.timings.summary import slower_reason
from compiler_core.runtime.measure.profile import PER_EVENT_US, SLOWER, profile_cpu, totals

SCRIPT = """import torch


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):
        y = self.fc(x)
        return torch.nn.functional.gelu(y) * 2 + x.sin()


m = torch.compile(M())
m(torch.randn(8, 16))
"""
FC_LINE, GELU_LINE = 10, 11


@pytest.fixture(scope="session")
def attributed(kept_runs):
    """(the job's result, its result rebuilt with its profiles taken as not withheld)."""
    return kept_runs(SCRIPT, "attributed.py")


def only_timing(result) -> dict:
    (timing,) = result["timings"]
    assert "error" not in timing, timing
    return timing


def test_an_attribution_or_why_not(attributed):
    result, _ = attributed
    timing = only_timing(result)
    attribution = timing["attribution"]
    assert "units" not in timing["kernels"]  # the profiles' units are used, not shipped
    withheld = [t["withheld"] for t in timing["kernels"]["totals"].values() if "withheld" in t]
    if withheld:
        assert all(reason in attribution["withheld"] for reason in withheld)
    else:
        assert attribution["rows"]


def test_each_kernel_names_the_eager_ops_it_replaced(attributed):
    _, quiet = attributed
    rows = {r["kernel"]: r for r in only_timing(quiet)["attribution"]["rows"]}
    (fused,) = [r for name, r in rows.items() if name.startswith("cpp_fused")]
    assert {op["op"] for op in fused["eager_ops"]} == {"aten::gelu", "aten::mul", "aten::sin",
                                                       "aten::add"}
    assert {op["matched"] for op in fused["eager_ops"]} == {"order"}
    assert fused["lines"] == [GELU_LINE] and fused["kind"] == "cpp"
    library = rows["aten::addmm"]  # extern_kernels.addmm, profiled as its ATen op
    assert [op["op"] for op in library["eager_ops"]] == ["aten::linear"]
    assert library["lines"] == [FC_LINE] and library["source"][0]["name"] == "extern_kernels.addmm"
    assert "outside kernels (launch, framework, Python)" in rows


def test_rows_add_up_to_each_sides_profile_and_call(attributed):
    _, quiet = attributed
    timing = only_timing(quiet)
    attribution, profile_totals = timing["attribution"], timing["kernels"]["totals"]
    rows = attribution["rows"]
    kernel_rows = [r for r in rows if r["kind"] != "outside"]
    for side in ("eager", "compiled"):
        summed = sum(r[f"{side}_us"] for r in kernel_rows)
        assert summed == pytest.approx(profile_totals[side]["us_per_call"], rel=1e-9)
        assert summed == pytest.approx(attribution[f"{side}_kernels_us"], rel=1e-9)
        # the profiled calls' own time holds their kernels
        assert summed <= profile_totals[side]["wall_us_per_call"]
        assert attribution[f"{side}_e2e_us"] == pytest.approx(
            timing["e2e"]["warm"][side]["median_ms"] * 1e3)
    for row in rows:
        assert row["saved_us"] == pytest.approx(row["eager_us"] - row["compiled_us"])
        assert row["eager_us"] == pytest.approx(sum(op["us"] for op in row["eager_ops"])) or (
            row["kind"] == "outside")
    assert [r["saved_us"] for r in rows] == sorted((r["saved_us"] for r in rows), reverse=True)
    assert attribution["cost_s"] is not None and attribution["cost_s"] < 1


def test_the_waterfall_goes_from_eagers_call_to_compileds(attributed):
    _, quiet = attributed
    attribution = only_timing(quiet)["attribution"]
    first, *steps, last = attribution["waterfall"]
    assert (first["us"], last["us"]) == (attribution["eager_e2e_us"],
                                        attribution["compiled_e2e_us"])
    outside = next(r for r in attribution["rows"] if r["kind"] == "outside")
    if outside["eager_us"] and outside["compiled_us"]:  # neither side's outside time clamped
        assert first["us"] - sum(s["saved_us"] for s in steps) == pytest.approx(last["us"])
    assert attribution["headline"].startswith("kernels ")
    assert any(s["label"].startswith("fusion") for s in steps)


def test_dynamo_nodes_are_read_with_the_op_each_calls(attributed):
    _, quiet = attributed
    assert dynamo_nodes(quiet["compiles"][0]["stages"]["dynamo_graph"]) == [
        ("y", "linear", FC_LINE), ("gelu", "gelu", GELU_LINE), ("mul", "mul", GELU_LINE),
        ("sin", "sin", GELU_LINE), ("add", "add", GELU_LINE)]
    # a compiled autograd graph calls ATen overloads: its table's target is `mul.Tensor`
    assert node_op("call_function", "mul.Tensor") == "mul"


def test_a_kernel_slower_than_its_eager_ops_says_what_was_measured():
    row = {"kernel": "triton_tem_fused_mm_0", "kind": "triton", "compiled_us": 30.0,
           "eager_us": 20.0, "recomputed": ["mul_2"],
           "eager_ops": [{"op": "aten::mm", "node": "mm", "us": 20.0, "matched": "order"}]}
    reason = slower_reason(row)
    assert reason.startswith("took 30.0 µs per call against 20.0 µs for the eager op it "
                             "replaced (aten::mm)")
    assert "recomputes mul_2" in reason and "Triton template" in reason
    assert slower_reason({**row, "compiled_us": 20.5}) is None  # within noise


def chain(x):
    return torch.relu(x.sin() * 2) + x


def test_units_add_up_to_the_profile_and_fit_in_the_call_timed_apart():
    """The engine's own profile of an eager and a compiled call, in this process (one thread):
    its units add up to its rows' busy total, and fit in the call's end-to-end time measured by
    torch.utils.benchmark, with the allowance past which the product withholds the profile
    (`totals` says so, and then the attribution is withheld: `test_an_attribution_or_why_not`)."""
    import torch._inductor.config as inductor_config
    x = torch.randn(64, 64)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with inductor_config.patch({"cpp.enable_kernel_profile": True}):
            compiled = torch.compile(chain)
            compiled(x)
        for fn in (lambda: chain(x), lambda: compiled(x)):
            e2e_us = Timer("fn()", globals={"fn": fn}).blocked_autorange(
                min_run_time=0.2).median * 1e6
            profile = profile_cpu(fn, 10)
            busy = totals(profile, e2e_us / 1e3)
            summed = sum(unit["us"] for unit in profile["units"])
            assert summed == pytest.approx(busy["us_per_call"], rel=1e-9)
            assert summed <= profile["wall_us_per_call"]
            if "withheld" not in busy:
                assert summed <= SLOWER * e2e_us + PER_EVENT_US * profile["events_per_call"]
    finally:
        torch.set_num_threads(threads)
    names = [unit["name"] for unit in profile["units"]]
    assert any(name.startswith("cpp_fused") for name in names)  # the compiled kernel, by name
