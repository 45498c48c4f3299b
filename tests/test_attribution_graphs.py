"""Kernel attribution across graphs (issue 44): the compiles a timing ran are named as the result
names them (after `torch._dynamo.reset()`, '[reset 1] 0/0', compiler_core/compile_ids.py), and
a library call in two graphs is a row per graph, as a generated kernel is.
"""

from __future__ import annotations

RESET = """import torch


def f(x):
    return torch.sin(x) + 1


def g(x):
    return torch.cos(x) * 2


x = torch.randn(8)
torch.compile(f)(x)
torch._dynamo.reset()
torch.compile(g)(x)
"""


def test_a_timing_after_a_reset_names_the_compiles_it_ran_as_the_result_does(kept_runs):
    """g compiled after the reset is '[reset 1] 0/0': its timing replayed that compile (PyTorch
    calls it 0/0), compiled nothing while timing, and its cos kernel holds eager's aten::cos."""
    _, quiet = kept_runs(RESET, "reset_timing.py")
    ids = [c["id"] for c in quiet["compiles"]]
    assert ids == ["0/0", "[reset 1] 0/0"], ids
    (timing,) = [t for t in quiet["timings"] if t["name"] == "g"]
    assert timing["replayed"] == ["[reset 1] 0/0"]
    assert "compiled_while_timing" not in timing
    (row,) = [r for r in timing["attribution"]["rows"]
              if any(op["op"] == "aten::cos" for op in r["eager_ops"])]
    assert row["kind"] == "cpp" and row["source"][0]["compile"] == "[reset 1] 0/0"


MATMUL_TWICE = """import torch


def f(x, w):
    y = x @ w
    print("a graph break")
    return y @ w


torch.compile(f)(torch.randn(8, 8), torch.randn(8, 8))
"""


def test_a_library_call_in_two_graphs_is_a_row_per_graph(kept_runs):
    """Both graphs of the break call `extern_kernels.mm` (profiled as aten::mm in each graph's
    Dynamo region): a row each, with its own compile, eager op and time."""
    _, quiet = kept_runs(MATMUL_TWICE, "matmul_twice.py")
    (timing,) = quiet["timings"]
    rows = [r for r in timing["attribution"]["rows"] if r["kernel"] == "aten::mm"]
    assert len(rows) == 2, timing["attribution"]["rows"]
    assert sorted(r["source"][0]["compile"] for r in rows) == ["0/0", "1/0"]
    for row in rows:
        assert len(row["source"]) == 1 and row["compiled_us"] > 0
        assert [op["op"] for op in row["eager_ops"]] == ["aten::matmul"]


SORT = """import torch


def f(x):
    return torch.sort(x.sin(), dim=-1).values * 2


torch.compile(f)(torch.randn(8, 16))
"""


def test_an_aten_fallback_is_listed_with_the_kernels_and_holds_its_eager_op(kept_runs):
    """Inductor calls `torch.ops.aten.sort.stable` itself (no kernel of its own): the compile's
    kernels list it (kind fallback, with its provenance: the `sort` node, and `sin`, whose buffer
    it sorts), and the attribution's row for it is that kernel's, holding eager's aten::sort."""
    _, quiet = kept_runs(SORT, "sort_fallback.py")
    (compiled,) = quiet["compiles"]
    (fallback,) = [k for k in compiled["kernels"] if k["kind"] == "fallback"]
    assert fallback["name"] == "torch.ops.aten.sort.stable"
    assert "sort" in fallback["dynamo_nodes"] and fallback["lines"] == [5]
    (timing,) = quiet["timings"]
    (row,) = [r for r in timing["attribution"]["rows"] if r["kernel"] == "aten::sort"]
    assert row["kind"] == "fallback" and row["source"][0]["name"] == fallback["name"]
    assert "aten::sort" in [op["op"] for op in row["eager_ops"]], row
    kernels_stage = compiled["stages"]["kernels"]  # a CPU compile's: C++ with // headers
    assert kernels_stage["language"] == "cpp" and "// ===== torch.ops.aten.sort.stable (fallback" in \
        kernels_stage["text"], kernels_stage["text"][:400]
