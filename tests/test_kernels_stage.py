"""The Kernels stage is built on the server, as every other stage (features/kernels_stage.py):
a compile's `stages["kernels"]` holds each kernel Inductor generated, its source under a header
naming its nodes and user lines, the list the page shows beside it (jump-to line, fusion
decisions, measured time per call), and it is served, indexed and stored as any stage.

A CPU run (the attribution test's job, shared through `kept_runs`) and a GPU run (tlparse's own
log of one, whose Triton kernels are Python).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_attribution import GELU_LINE, SCRIPT

from compiler_core import result_index, stage_part
from compiler_core.report.trace_log import trace_result

GPU_LOG = Path(__file__).parent / "data" / "tlparse" / "simple.log"


@pytest.fixture(scope="module")
def cpu(kept_runs):
    """(the job's result, its result rebuilt with its profiles taken as not withheld)."""
    return kept_runs(SCRIPT, "attributed.py")


@pytest.fixture(scope="module")
def gpu():
    return trace_result({GPU_LOG.name: GPU_LOG.read_text()})


def headers(kernel: dict, comment: str) -> list[str]:
    """The lines the stage puts above a kernel's source."""
    graph = f", {kernel['graph']}" if kernel["graph"] else ""
    return [line for line in (
        f"{comment} ===== {kernel['name']} ({kernel['kind']}{graph}) =====",
        kernel["nodes"] and f"{comment} nodes: {', '.join(kernel['nodes'])}",
        kernel["lines"] and f"{comment} user lines: {', '.join(map(str, kernel['lines']))}")
        if line]


def assert_each_kernel_under_its_header(compiled: dict, comment: str) -> None:
    """Every kernel of the compile, in order, at the line its list item names: its headers,
    then its source with the user line and kernel line of each source line."""
    stage = compiled["stages"]["kernels"]
    lines = stage["text"].split("\n")
    assert [k["name"] for k in stage["kernels"]] == [k["name"] for k in compiled["kernels"]]
    for listed, kernel in zip(stage["kernels"], compiled["kernels"]):
        top = headers(kernel, comment)
        start = listed["line"] - 1 + len(top)
        assert lines[listed["line"] - 1:start] == top
        if kernel["source"]:
            source = kernel["source"].split("\n")
            assert lines[start:start + len(source)] == source
            assert stage["src_lines"][start:start + len(source)] == kernel["src_lines"]
            assert stage["kernel_src"][start:start + len(source)] == [
                f"{kernel['label']}:{i + 1}" for i in range(len(source))]
        assert {"label": kernel["label"], "line": listed["line"] - 1} in stage["sections"]


def test_a_cpu_compiles_kernels_are_a_stage_of_its_result(cpu):
    result, _ = cpu
    (compiled,) = result["compiles"]
    stage = compiled["stages"]["kernels"]
    assert stage["language"] == "cpp" and stage["title"] == "Generated kernels"
    assert_each_kernel_under_its_header(compiled, "//")
    (fused,) = [k for k in stage["kernels"] if GELU_LINE in k["lines"]]  # gelu, * 2, + sin
    assert fused["kind"] == "cpp" and fused["name"].startswith("cpp_fused_")


def test_a_kernel_lists_what_the_scheduler_fused_into_it_and_refused(gallery_results):
    """The MLP block's LayerNorm kernel (the fusion lesson): the scheduler's fusions that made
    it, and its refusal to fuse across the matmuls (PyTorch's words)."""
    compiled = gallery_results["mlp_fusion"]["compiles"][0]
    decisions = compiled["fusion"]["decisions"]
    listed = {k["name"]: k for k in compiled["stages"]["kernels"]["kernels"]}
    norm = next(k for name, k in listed.items() if "native_layer_norm" in name)
    fused, refused = ([decisions[i] for i in norm["fusion"][side]] for side in ("fused", "refused"))
    assert fused and all(d["fused"] and d["kernel"] == norm["name"] for d in fused)
    assert any("intermediate nodes" in d["reason"] and not d["fused"] for d in refused)
    assert sum(len(k["fusion"]["fused"]) for k in listed.values()) == sum(
        d["fused"] for d in decisions)


def test_the_kernels_stage_is_served_and_indexed_as_any_stage(cpu):
    result, _ = cpu
    (compiled,) = result["compiles"]
    stage = compiled["stages"]["kernels"]
    assert stage_part(result, compiled["id"], "kernels") == {"artifact": stage}
    summary = result_index({**result, "partial": True})["compiles"][0]["stages"]["kernels"]
    assert "text" not in summary and summary["size"] == len(stage["text"])


def test_each_kernels_time_is_the_one_its_timing_measured(cpu):
    _, quiet = cpu
    (compiled,) = quiet["compiles"]
    (timing,) = quiet["timings"]
    measured = {row["name"]: row["us_per_call"] for row in timing["kernels"]["compiled"]}
    listed = compiled["stages"]["kernels"]["kernels"]
    assert measured and {k["name"]: k["time"]["us"] for k in listed if k["time"]} == {
        name: us for name, us in measured.items() if name in {k["name"] for k in listed}}
    assert all(k["time"]["callable"] == timing["name"] for k in listed if k["time"])


def test_a_gpu_runs_triton_kernels_are_a_python_stage(gpu):
    staged = [c for c in gpu["compiles"] if c["kernels"]]
    assert staged and gpu["stage_errors"] == []
    for compiled in staged:
        stage = compiled["stages"]["kernels"]
        assert stage["language"] == "python"
        assert_each_kernel_under_its_header(compiled, "#")
        assert any(k["kind"] == "triton" for k in stage["kernels"])
        assert all(k["time"] is None for k in stage["kernels"])  # a log holds no timings
