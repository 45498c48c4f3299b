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

import json

import pytest
import torch

from compiler_core import Options

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

MUTATED = """import torch

def step(x):
    x.add_(1)
    return x.sin()

step = torch.compile(step, mode="reduce-overhead")
x = torch.randn(64, device="cuda")
for _ in range(3):
    step(x)
"""
MUTATION_LINE = 4

RERECORDED = """import torch

lin = torch.nn.Linear(16, 16, device="cuda")
f = torch.compile(lin, mode="reduce-overhead")
with torch.no_grad():
    for n in (4, 8, 8, 16, 16):
        f(torch.randn(n, 16, device="cuda"))
    lin.weight = torch.nn.Parameter(torch.randn(16, 16, device="cuda"))
    for _ in range(3):
        f(torch.randn(16, 16, device="cuda"))
"""

AUTOTUNED = """import torch

def mm(a, b):
    return a @ b

mm = torch.compile(mm, mode="max-autotune")
a = torch.randn(512, 512, device="cuda", dtype=torch.float16)
mm(a, a)
"""


@pytest.fixture(scope="module")
def results(worker):
    options = Options(device="cuda", measure=False, views=False)
    return {name: worker.run(source, options, user_file=f"{name}.py")
            for name, source in (("mutated", MUTATED), ("rerecorded", RERECORDED),
                                 ("autotuned", AUTOTUNED))}


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


def test_new_sizes_record_graphs_and_a_new_weight_records_again(results):
    result = results["rerecorded"]
    assert result["error"] is None, result["error"]
    report = result["cudagraphs"]
    _show("sizes and new weight: cudagraphs", report)
    assert report is not None
    assert len(report["recordings"]) >= 2, report["messages"]
    (rerecord, *_) = report["rerecords"]
    assert rerecord["function"] and rerecord["reason"].strip()
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
