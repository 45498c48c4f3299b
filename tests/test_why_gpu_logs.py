"""The "why" views on the CPU: max-autotune choices from a real job, the CUDA graphs report
built from the records of a real H200 run, the log handler's hand-on to torch's own handlers,
and the bounds on what a job's records can make of both."""

from __future__ import annotations

import json
import logging
import os

import pytest

from compiler_core import Options
from compiler_core.report.result import build_result
from stand_in_session import StandInSession
from compiler_core.features import autotune, cudagraphs

DATA = os.path.join(os.path.dirname(__file__), "data", "why_gpu_h200.json")

# A batched matmul under max-autotune: on an AVX2/AVX-512 CPU Inductor benchmarks its C++ GEMM
# template against ATen's bmm (max-autotune also turns CUDA graphs on, which a CPU never tries).
AUTOTUNED_BMM = """import torch

def f(a, b):
    return torch.relu(torch.bmm(a, b))

g = torch.compile(f, mode="max-autotune")
g(torch.randn(2, 32, 64), torch.randn(2, 64, 32))
"""


@pytest.fixture(scope="module")
def autotuned(worker):
    return worker.run(AUTOTUNED_BMM, Options(device="cpu", measure=False, views=False),
                      user_file="tune.py")


def test_cpu_max_autotune_lists_aten_and_cpp_template_with_the_winner_that_ran(autotuned):
    assert autotuned["error"] is None, autotuned["error"]
    (compiled,) = autotuned["compiles"]
    (op,) = compiled["autotuning"]
    assert op["op"] == "bmm" and op["inputs"] == ["[2, 32, 64]", "[2, 64, 32]"]
    names = [c["name"] for c in op["choices"]]
    assert "bmm" in names and any(n.startswith("cpp_") for n in names), names
    times = [c["ms"] for c in op["choices"]]
    assert all(t > 0 for t in times) and times == sorted(times)
    (winner,) = [c for c in op["choices"] if c["winner"]]
    assert winner is op["choices"][0] and op["winner"] == winner["name"]
    # the winner is what the generated code runs: ATen's bmm, or the C++ template's kernel
    code = compiled["stages"]["output_code"]["text"]
    assert ("extern_kernels.bmm" in code) == (op["winner"] == "bmm")
    assert autotuned["cudagraphs"] is None  # Inductor logs no CUDA graph decision on a CPU


@pytest.fixture(scope="module")
def h200():
    with open(DATA, encoding="utf-8") as fh:
        return json.load(fh)


def test_skip_reason_from_a_real_h200_log_names_the_mutating_line(h200):
    probe = h200["mutated_input"]
    report = cudagraphs.cudagraphs(probe["records"], "/job/mutated_input.py")
    (skip,) = report["skips"]
    assert skip["reason"].startswith("skipping cudagraphs due to mutated inputs (1 instances)")
    assert skip["line"] == 4  # x.add_(1)


def test_recordings_and_rerecord_from_a_real_h200_log(h200):
    """torch 2.11 there: a graph per new batch size, then the weight replaced by a new Parameter
    made Inductor record the graph again (its lines name no mode)."""
    probe = h200["sizes_and_new_weight"]
    report = cudagraphs.cudagraphs(probe["records"], "/job/sizes_and_new_weight.py")
    assert report["skips"] == []
    assert "Recording cudagraph tree for symint key 8" in [m["text"] for m in report["messages"]]
    assert {(r["compile_id"], r["function"]) for r in report["recordings"]} == {
        ("0/1", "partition_0")}  # the CUDA graphs recorded; a tree per size is a message
    (rerecord, *_) = report["rerecords"]
    assert rerecord == {"compile_id": "0/1", "function": "partition_0", "mode": None,
                        "reason": "static input data pointer changed.", "line": None}
    assert report["partitions"][0]["text"].startswith("Created 1 graph partitions")


def test_gpu_autotune_records_from_a_real_h200_run_mark_the_fastest(h200):
    probe = h200["max_autotune_mm"]
    records = [r for r in probe["records"] if r["name"] == "autotune_choices"]
    assert records
    ops = autotune.autotuning(_Compile(records))
    (op,) = [op for op in ops if op["op"] == "mm"]
    assert any(c["name"].startswith("triton_mm") for c in op["choices"])
    assert op["winner"] == min(op["choices"], key=lambda c: c["ms"])["name"]


def test_rerecord_reason_survives_the_assertion_of_a_partition_function():
    """`log_data_ptr_mismatch` asserts one input per placeholder (a partition's function has
    fewer placeholders, as on the H200); guarded, it gives PyTorch's name of the mismatch."""
    from torch._inductor import cudagraph_trees
    from torch._inductor.cudagraph_utils import CheckInvariantStatus
    from compiler_core.runtime.hooks.cudagraphs import guard_rerecord_reason

    original = cudagraph_trees.log_data_ptr_mismatch
    with pytest.raises(AssertionError, match="length mismatch"):
        original([], [None], [None], [], CheckInvariantStatus.StaticInputIdxMismatch)
    guard_rerecord_reason()
    try:
        assert cudagraph_trees.log_data_ptr_mismatch(
            [], [None], [None], [], CheckInvariantStatus.StaticInputIdxMismatch,
        ) == "static input data pointer changed."
    finally:
        cudagraph_trees.log_data_ptr_mismatch = original


class _Compile:
    """The one method `autotune.autotuning` reads of a compile's records."""

    def __init__(self, records):
        self.records = records

    def all(self, name):
        return [r for r in self.records if r["name"] == name]


def test_hostile_records_are_bounded_and_conform():
    junk = [{"name": "cudagraph_log", "compile_id": "0/0", "t": 0.0, "payload": None,
             "meta": {"message": "skipping cudagraphs due to " + "x" * 10**5, "level": 7}}] * 300
    junk += [{"name": "cudagraph_log", "compile_id": None, "t": 0.0, "payload": None,
              "meta": {"message": ["not", "text"]}}]
    junk += [{"name": "autotune_choices", "compile_id": "0/0", "t": 0.0, "payload": None,
              "meta": {"op": {"a": 1}, "inputs": "abc",
                       "choices": [{"name": "c", "ms": float("inf")}, "junk",
                                   {"name": "d", "ms": True}, {"name": "e", "ms": 2.0}] * 100}}]
    result = build_result(junk, "/job/x.py")
    report = result["cudagraphs"]
    assert len(report["skips"]) == cudagraphs.ENTRIES and report["truncated"]
    assert max(len(s["reason"]) for s in report["skips"]) <= cudagraphs.TEXT
    (op,) = result["compiles"][0]["autotuning"]
    assert len(op["choices"]) <= autotune.ENTRIES and op["winner"] == "e"
    assert all(c["ms"] in (None, 2.0) for c in op["choices"])
    assert not [e for e in result["stage_errors"] if e["step"] == "schema"], result["stage_errors"]


def test_handler_records_debug_lines_and_hands_on_only_what_torch_would_print():
    from compiler_core.runtime.hooks import cudagraphs as capture_why
    from torch._inductor.cudagraph_utils import log_cudagraph_skip_and_bump_counter

    session = StandInSession(__file__)
    printed = []
    parent = logging.getLogger("torch._inductor")
    seen = logging.Handler()
    seen.emit = printed.append
    loggers = [logging.getLogger(name) for name in capture_why._cudagraph_logger_names()]
    saved = [(logger.level, logger.propagate, list(logger.handlers)) for logger in loggers]
    parent.addHandler(seen)
    try:
        capture_why.record_cudagraph_log(session)
        logging.getLogger("torch._inductor.cudagraph_trees.__cudagraphs").debug(
            "[0/0] Recording cudagraph tree for graph without symints")
        log_cudagraph_skip_and_bump_counter("skipping cudagraphs due to a test")  # torch's own
    finally:
        parent.removeHandler(seen)
        for logger, (level, propagate, handlers) in zip(loggers, saved):
            logger.setLevel(level)
            logger.propagate = propagate
            logger.handlers[:] = handlers
    records = session.records()
    assert [r["meta"]["message"] for r in records] == [
        "[0/0] Recording cudagraph tree for graph without symints",
        "skipping cudagraphs due to a test"]
    assert [r.getMessage() for r in printed] == ["skipping cudagraphs due to a test"]
