"""The "why" views on a GPU, through the real engine (skipped without CUDA).

What it checks, each from Inductor's own records of a real run:
- `mode="reduce-overhead"` on a function that mutates its input: the run's `cudagraphs` report
  has a skip whose reason is PyTorch's "skipping cudagraphs due to mutated inputs ...", pointing
  at the script's `x.add_(1)` line;
- `mode="reduce-overhead"` on an nn.Linear called with new batch sizes, then with its weight
  replaced by a new Parameter: CUDA graphs are recorded (at least two recordings), and recorded
  again for the new weight's address (a re-record naming the function, with a reason);
- `mode="max-autotune"` on an fp16 matmul: the compile's `autotuning` lists the benchmarked
  choices (cuBLAS `mm` and Triton `triton_mm_*` templates) with their times, fastest first,
  exactly one marked the winner: the fastest.
Each test prints the extracted structure, to be read in the output (`pytest -s`).
"""

from __future__ import annotations

import importlib.util
import json
import os

import pytest
import torch

from compiler_core import Options

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

def probe_scripts() -> dict[str, str]:
    """The scripts of the GPU probe (`bench/why_gpu_probe.py`): the test runs the same ones."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench",
                        "why_gpu_probe.py")
    spec = importlib.util.spec_from_file_location("why_gpu_probe", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SCRIPTS


MUTATION_LINE = 4  # `x.add_(1)` in the probe's mutated_input script
NEW_WEIGHT_CALL_LINE = 10  # the call after the weight is replaced, in sizes_and_new_weight


@pytest.fixture(scope="module")
def results(worker):
    options = Options(device="cuda", measure=False, views=False)
    scripts = probe_scripts()
    scripts["default_mode"] = scripts["mutated_input"].replace('mode="reduce-overhead"',
                                                               'mode="default"')
    return {name: worker.run(scripts[slug], options, user_file=f"{name}.py")
            for name, slug in (("mutated", "mutated_input"), ("rerecorded", "sizes_and_new_weight"),
                               ("autotuned", "max_autotune_mm"), ("default", "default_mode"))}


def _show(title: str, value) -> None:
    print(f"\n--- {title} ---\n{json.dumps(value, indent=1)[:6000]}")


def test_mutated_input_skips_cudagraphs_at_the_mutating_line(results):
    result = results["mutated"]
    assert result["error"] is None, result["error"]
    report = result["cudagraphs"]
    _show("mutated input: cudagraphs", report)
    assert report is not None, "Inductor logged nothing on its cudagraphs artifact"
    (skip, *_) = [s for s in report["skips"] if "mutated inputs" in s["reason"]]
    assert skip["reason"].startswith("skipping cudagraphs due to mutated inputs")
    assert skip["line"] == MUTATION_LINE
    assert skip["compile_id"] == "0/0"  # named by the tree manager's function where it skips
    assert report["recordings"] == []  # skipped: no CUDA graph recorded


def test_a_default_mode_run_has_no_cudagraphs_report(results):
    """Inductor's scheduler logs graph partitions with CUDA graphs off too: left out."""
    result = results["default"]
    assert result["error"] is None, result["error"]
    assert result["cudagraphs"] is None, result["cudagraphs"]


def test_new_sizes_record_graphs_and_a_new_weight_records_again(results):
    result = results["rerecorded"]
    assert result["error"] is None, result["error"]
    report = result["cudagraphs"]
    _show("sizes and new weight: cudagraphs", report)
    assert report is not None
    assert len(report["recordings"]) >= 2, report["messages"]
    assert all(r["compile_id"] and r["function"] for r in report["recordings"])
    (rerecord, *_) = report["rerecords"]
    assert rerecord["function"] and rerecord["reason"].strip()
    assert rerecord["line"] == NEW_WEIGHT_CALL_LINE
    assert not report["skips"], report["skips"]


def test_max_autotune_lists_the_benchmarked_choices_and_the_winner(results):
    result = results["autotuned"]
    assert result["error"] is None, result["error"]
    tuned = [op for c in result["compiles"] for op in c["autotuning"]]
    _show("max-autotune: autotuning", tuned)
    (op,) = [op for op in tuned if op["op"] == "mm"]
    names = [c["name"] for c in op["choices"]]
    assert "mm" in names and any(n.startswith("triton_mm") for n in names), names
    times = [c["ms"] for c in op["choices"] if c["ms"] is not None]
    assert times == sorted(times) and times[0] > 0
    (winner,) = [c for c in op["choices"] if c["winner"]]
    assert winner["ms"] == times[0] and op["winner"] == winner["name"]
