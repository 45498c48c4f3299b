"""Timings on CPU (labelled CPU), from the real engine: every compiled callable timed on its
recorded arguments; correctness gates the speed-up; per-kernel rows name the compiled kernels
and fit in the call; a verdict only where quiet paired turns support it. The pieces alone (clocks,
verdicts, profiles, correctness) are tested in tests/test_timing_{series,profiles,correctness}.py."""

from __future__ import annotations

import time

import pytest

from compiler_core import Options


SCRIPT = '''
import torch
from torch.nn import functional as F

def mlp(x, w):
    return F.gelu(x @ w).softmax(-1) * 2

state = torch.zeros(64)
def stateful(x):
    state.add_(1)
    return x + state

def wrong_backend(gm, example_inputs):
    return lambda *args: [out * 2 for out in gm(*args)]

model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 64))
compiled_model = torch.compile(model)
print(torch.compile(mlp)(torch.randn(128, 256), torch.randn(256, 256)).shape)
compiled_model(torch.randn(32, 64)).sum().backward()
with torch.no_grad():
    compiled_model(torch.randn(16, 64))
torch.compile(stateful)(torch.randn(64))
torch.compile(lambda x: x.sin() + 1, backend=wrong_backend)(torch.randn(64))
'''


@pytest.fixture(scope="module")
def result(worker, tmp_path_factory):
    path = tmp_path_factory.mktemp("timing") / "timing_script.py"
    path.write_text(SCRIPT)
    result = worker.run(SCRIPT, Options(device="cpu"), user_file=str(path))
    assert result["error"] is None, result["error"]
    return result


REPLAYED = '''
import torch

class Gate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        if x.sum() > 0:  # the branch depends on the values: a graph break
            return self.lin(x).relu()
        return self.lin(-x).sigmoid()

gate = torch.compile(Gate())
gate(torch.ones(4, 8))
gate(-torch.ones(6, 8))
with torch.no_grad():
    gate(torch.ones(3, 8))
    gate(-torch.ones(5, 8))

def bump(x):
    x.add_(1)
    return x * 2

torch.compile(bump)(torch.zeros(16))

scale = 2.0
def scaled(x):
    return x * scale

torch.compile(scaled)(torch.randn(8))
scale = 3.0  # the guard on `scale` fails now: calling again would compile again

def double(x):
    return x * 2 + 1

compiled_double = torch.compile(double)
compiled_double(torch.randn(4))
compiled_double(torch.randn(8))  # a new size: compiled again, with a dynamic size
'''


@pytest.fixture(scope="module")
def replayed(worker):
    result = worker.run(REPLAYED, Options(device="cpu"))
    assert result["error"] is None, result["error"]
    return result


def timings_of(result, name):
    return [t for t in result["timings"] if t["name"] == name]


def test_every_callable_and_signature_is_timed(result):
    assert [(t["name"], len(t["arguments"])) for t in result["timings"]] == [
        ("Sequential", 1), ("Sequential", 1), ("mlp", 2), ("stateful", 1), ("<lambda>", 1)]
    for timing in result["timings"]:
        assert "error" not in timing, timing
        assert timing["device"] == "cpu" and "perf_counter" in timing["clock"]


def test_measure_off_gives_the_stages_without_timings(worker):
    from compiler_core.runtime.measure import NOT_MEASURED
    source = "import torch\nf = torch.compile(lambda x: x.cos() * 2)\nf(torch.randn(8))\n"
    result = worker.run(source, Options(device="cpu", measure=False))
    assert result["error"] is None and result["timings"] == []
    assert NOT_MEASURED in result["notes"] and result["options"]["measure"] is False
    assert "output_code" in result["compiles"][0]["stages"]


def test_end_to_end_statistics_are_consistent(result):
    for timing in result["timings"]:
        warm = timing["e2e"]["warm"]
        assert set(timing["e2e"]) == {"warm"}  # cold and CUDA graphs are GPU-only
        for mode in ("eager", "compiled"):
            stats = warm[mode]
            assert stats["samples"] >= 5 and stats["min_ms"] > 0
            assert stats["q1_ms"] <= stats["median_ms"] <= stats["q3_ms"]
        if timing["correctness"]["ok"] is not False:
            speed = warm["speedup"]
            assert speed["pairs"] == warm["eager"]["samples"] == warm["compiled"]["samples"]
            assert speed["low"] <= speed["median"] <= speed["high"]


def test_correctness_gates_the_speedup(result):
    (mlp,) = timings_of(result, "mlp")
    assert mlp["correctness"]["ok"] is True and mlp["correctness"]["max_abs"] < 1e-3
    (stateful,) = timings_of(result, "stateful")
    assert stateful["correctness"]["ok"] is None
    assert "not comparable" in stateful["correctness"]["reason"]
    (wrong,) = timings_of(result, "<lambda>")
    assert wrong["correctness"]["ok"] is False and wrong["correctness"]["max_abs"] > 0.1
    assert wrong["e2e"]["warm"]["speedup"] is None
    assert "does not match" in wrong["notes"][0]


def test_grad_mode_and_backward_follow_the_script(result):
    training, inference = timings_of(result, "Sequential")
    assert (training["grad_mode"], training["mode"]) == ("grad", "forward+backward")
    assert (inference["grad_mode"], inference["mode"]) == ("no_grad", "call")
    assert training["correctness"]["ok"] is True
    assert training["timed"] == "Forward and backward (grad mode)"
    assert inference["timed"] == "Inference (forward, no_grad)"
    (mlp,) = timings_of(result, "mlp")  # called in grad mode, never backward
    assert (mlp["mode"], mlp["timed"]) == ("call", "Forward (grad mode, no backward)")


# slug -> what its timings' headline names: the script's calls as they ran
HEADLINED = {"inference_no_grad": "Inference (forward, no_grad)",
             "training_step": "Forward and backward (grad mode)",
             "mlp_fusion": "Forward (grad mode, no backward)"}


@pytest.mark.parametrize("slug", HEADLINED)
def test_the_headline_names_the_series_the_script_ran(gallery_results, slug):
    """No headline for a series the script never ran: the MLP block's parameters require grad
    but the script never calls backward, so its forward is timed alone (it was timed forward
    and backward before); the training step's loss.backward() is timed with its forward."""
    timings = gallery_results[slug]["timings"]
    assert timings and [t["timed"] for t in timings] == [HEADLINED[slug]] * len(timings)
    backward = HEADLINED[slug].startswith("Forward and backward")
    assert all(t["mode"] == ("forward+backward" if backward else "call") for t in timings)


def test_per_kernel_rows_name_the_compiled_cpp_kernels(result):
    """Where the profile was trusted (a loaded machine's is withheld, see below)."""
    (mlp,) = timings_of(result, "mlp")
    kernels = mlp["kernels"]
    generated = {k["name"] for c in result["compiles"] for k in c["kernels"] if k["kind"] == "cpp"}
    if not kernels["totals"]["compiled"].get("withheld"):
        compiled_cpp = {r["name"] for r in kernels["compiled"] if r["kind"] == "cpp"}
        assert compiled_cpp and compiled_cpp <= generated
        assert kernels["totals"]["compiled"]["launches_per_call"] > 0
    if not kernels["totals"]["eager"].get("withheld"):
        assert "aten::mm" in {r["name"] for r in kernels["eager"]}
    for rows in (kernels["eager"], kernels["compiled"]):
        assert all(r["us_per_call"] >= 0 and r["launches"] > 0 for r in rows)
    assert kernels["cache"] == "warm (CPU)"


def test_plots_are_plotly_figures(result):
    (mlp,) = timings_of(result, "mlp")
    figure, totals = mlp["plots"]["kernels"], mlp["kernels"]["totals"]
    if any(side.get("withheld") for side in totals.values()):
        assert figure is None  # no half comparison
    else:
        assert figure["layout"]["barmode"] == "stack"
        assert {trace["x"][0] for trace in figure["data"]} == {"eager", "compiled"}
    assert mlp["plots"]["roofline"] is None  # needs a GPU's measured peaks


def test_timing_leaves_no_trace_in_the_output_or_the_compiles(result):
    assert "USDT" not in result["stderr"] and "profiler" not in result["stderr"].lower()
    assert len(result["compiles"]) == 5  # timing compiled nothing more


def test_each_call_is_timed_as_it_ran_whatever_branch_its_values_take(replayed):
    gates = timings_of(replayed, "Gate")
    assert [t.get("error") for t in gates] == [None] * 4, gates
    assert [t["grad_mode"] for t in gates] == ["grad", "grad", "no_grad", "no_grad"]
    assert [t["mode"] for t in gates] == ["call"] * 4  # the script never calls backward
    assert all(t["correctness"]["ok"] is True for t in gates)
    assert all(t["e2e"]["warm"]["speedup"]["median"] > 0 for t in gates)


def test_a_callable_that_mutates_its_inputs_is_timed_on_restored_inputs(replayed):
    (bump,) = timings_of(replayed, "bump")
    assert "error" not in bump and bump["correctness"]["ok"] is True
    assert "restored" in bump["inputs"] and bump["e2e"]["warm"]["calls_per_sample"] == 1


def test_a_call_that_would_compile_again_says_why_in_one_line(replayed):
    (scaled,) = timings_of(replayed, "scaled")
    assert scaled["error"].startswith("not timed: ") and "compile again" in scaled["error"]
    assert "\n" not in scaled["error"] and "scale" in scaled["error"]


def test_a_timing_lock_holds_back_the_timings_only(worker, tmp_path):
    """Workers sharing a timing lock (a GPU's) compile at once but time one at a time: with the
    lock held elsewhere, the job's stages arrive, its timings wait for the lock."""
    import fcntl
    import threading
    lock = tmp_path / "gpu.lock"
    stages, done = [], threading.Event()
    source = "import torch\ntorch.compile(lambda x: x.sin() + 1)(torch.randn(16))\n"
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        worker.timing_lock = str(lock)
        try:
            runner = threading.Thread(target=lambda: (
                stages.append(worker.run(source, Options(device="cpu", views=False),
                                         listener=lambda e: stages.append(e.get("stage")))),
                done.set()))
            runner.start()
            deadline = time.monotonic() + 120
            while "output_code" not in stages and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(4.0)  # without the lock, timing this call ends well within this
            assert "output_code" in stages and "timings" not in stages and not done.is_set()
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
            worker.timing_lock = None
    assert done.wait(120)
    result = stages[-1]
    assert result["timings"] and "e2e" in result["timings"][0], result["timings"]


# Per-kernel rows and totals: kernels of one call never take longer than the call, and the rows
# add up to the totals; where that cannot be shown, the times are withheld with the figure why.

def assert_honest_profile(timing):
    from compiler_core.runtime.measure.profile import ADD_UP_TOLERANCE, PER_EVENT_US, SLOWER
    kernels = timing["kernels"]
    for side in ("eager", "compiled"):
        totals, rows = kernels["totals"][side], kernels[side]
        if totals.get("withheld"):
            assert rows == [] and "busy_share" not in totals, totals
            assert any(ch.isdigit() for ch in totals["withheld"]), totals["withheld"]
            continue
        assert rows and sum(r["us_per_call"] for r in rows) == pytest.approx(
            totals["recorded_us_per_call"], rel=1e-6)  # the rows add up to the totals
        assert totals["us_per_call"] <= totals["recorded_us_per_call"] * (1 + 1e-9)
        wall = totals["wall_us_per_call"]  # the profiled calls' own time (host clock)
        assert totals["recorded_us_per_call"] <= wall * (1 + ADD_UP_TOLERANCE)
        assert max(r["us_per_call"] for r in rows) <= wall * (1 + ADD_UP_TOLERANCE)
        assert totals["busy_share"] == pytest.approx(totals["us_per_call"] / wall)
        assert all(r["us_per_launch"] is None or r["us_per_launch"] <= wall * (1 + ADD_UP_TOLERANCE)
                   for r in rows)
        e2e_us = 1e3 * timing["e2e"]["warm"][side]["median_ms"]  # the call timed unprofiled
        assert wall <= SLOWER * e2e_us + PER_EVENT_US * totals["events_per_call"]
        assert totals["contention"]["busy"] is None


def test_per_kernel_times_fit_in_the_call_and_add_up(result, replayed):
    for timing in result["timings"] + replayed["timings"]:
        if "error" not in timing:
            assert_honest_profile(timing)


def assert_supported_verdict(series):
    from compiler_core.runtime.measure.verdict import MIN_PAIRS
    contention, verdict, speed = series["contention"], series["verdict"], series["speedup"]
    assert 0 <= contention["wait_share"] and contention["threads"] >= 1
    assert contention["wall_s"] > 0 and contention["cores"] >= 1
    if speed is None:
        assert verdict["outcome"] == "not_reported"
    elif contention["busy"]:
        assert verdict["outcome"] == "busy" and verdict["reason"] == contention["busy"]
    elif verdict["outcome"] in ("faster", "slower"):
        assert speed["pairs"] >= MIN_PAIRS
        assert (speed["low"] > 1) if verdict["outcome"] == "faster" else (speed["high"] < 1)


def test_every_series_carries_its_contention_and_a_verdict_it_supports(result):
    for timing in result["timings"]:
        assert_supported_verdict(timing["e2e"]["warm"])


def test_timing_invariants_on_every_timed_gallery_example(gallery_results):
    """Per side, per-kernel time per call within the profiled call's time and the rows adding
    up to the totals (within `profile.ADD_UP_TOLERANCE`), the profiled call close to the call
    timed without the profiler, or the times withheld with their figures; a verdict only where
    enough quiet paired turns support it."""
    timed = [t for result in gallery_results.values() for t in result["timings"]
             if "error" not in t]
    assert timed
    for timing in timed:
        assert_honest_profile(timing)
        assert_supported_verdict(timing["e2e"]["warm"])


def test_the_timing_names_the_compiled_graph_each_replay_ran(replayed):
    """A callable compiled twice (a new size: a dynamic-shape graph) runs one of its graphs per
    replay; the timing names it (Dynamo's profiler range 'Torch-Compiled Region: ID')."""
    ids = {c["id"] for c in replayed["compiles"]}
    first, second = timings_of(replayed, "double")
    assert len(first["replayed"]) == 1 and first["replayed"][0] in ids
    assert second["replayed"][0].endswith("/1")  # the second compile of the frame
    gate = timings_of(replayed, "Gate")[0]
    assert len(gate["replayed"]) >= 2  # the graph break: two graphs in one call
