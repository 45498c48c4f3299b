"""Timings on CPU (labelled CPU): the real engine times every compiled callable on its recorded
arguments; correctness gates the speed-up; per-kernel rows name the compiled kernels."""

from __future__ import annotations

import sys
import time

import pytest
import torch

from compiler_core import Options
from compiler_core.present.plots import kernel_figure
from compiler_core.runtime.measure.clocks import (HOST_BOUND_S, MAX_CALLS, MIN_TURNS,
                                                  interleaved, plan_per_call, summary)
from compiler_core.runtime.measure.accuracy import compare, verdict
from compiler_core.runtime.measure.gpu_clock import GpuClockWatch, summarise
from compiler_core.runtime.measure.inputs import fresh_like
from compiler_core.runtime.measure.timing import launch_bound_notes

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


def test_plot_labels_escape_kernel_names():
    """Plotly's labels are text with a few HTML tags: a profiler range named by the script
    (torch.profiler.record_function) shows as text."""
    row = {"name": "<b>x</b> & y", "us_per_call": 1.0}
    kernels = {"eager": [row], "compiled": [row], "cache": "warm (CPU)",
               "totals": {"eager": {"us_per_call": 1.0}, "compiled": {"us_per_call": 1.0}}}
    trace = kernel_figure(kernels, "cpu")["data"][0]
    assert trace["name"] == "&lt;b&gt;x&lt;/b&gt; &amp; y"
    assert trace["hovertemplate"].startswith("&lt;b&gt;x&lt;/b&gt; &amp; y<br>")


def test_timing_leaves_no_trace_in_the_output_or_the_compiles(result):
    assert "USDT" not in result["stderr"] and "profiler" not in result["stderr"].lower()
    assert len(result["compiles"]) == 5  # timing compiled nothing more


def test_fresh_inputs_are_random_with_the_same_layout():
    base = torch.randn(6, 4).t()
    fresh = fresh_like(base)
    assert fresh.shape == base.shape and fresh.stride() == base.stride()
    assert not torch.equal(fresh, base) and bool(fresh.ne(0).all())
    ids = fresh_like(torch.tensor([3, 7, 5]))
    assert ids.dtype == torch.int64 and int(ids.min()) >= 3 and int(ids.max()) <= 7
    leaf = fresh_like(torch.ones(3, requires_grad=True))
    assert leaf.requires_grad and leaf.is_leaf
    assert fresh_like(torch.zeros(2, dtype=torch.bool)).dtype == torch.bool


def test_tolerance_depends_on_dtype():
    x = torch.randn(1000)
    assert compare(x, x + 1e-6)["ok"] is True
    assert compare(x, x + 1e-2)["ok"] is False
    bf16 = x.bfloat16()
    assert compare(bf16, bf16 + 1e-2)["ok"] is True
    assert compare(x, x[:10])["ok"] is False
    assert compare(x, x.double())["ok"] is False  # dtype changed


def test_summary_quartiles():
    stats = summary([1.0, 2.0, 3.0, 4.0, 100.0])
    assert (stats["q1_ms"], stats["median_ms"], stats["q3_ms"]) == (2.0, 3.0, 4.0)


class ScriptedClock:
    """Each function returns its own time in ms; a host that is slow on every third turn."""

    def __init__(self):
        self.samples = 0

    def block(self, fn, calls, before=None):
        self.samples += 1
        slow = (self.samples - 1) // 2 % 3 == 2  # both samples of a turn see the same host
        return fn(slow)


def test_the_speedup_pairs_turns_that_saw_the_same_host():
    """A call the host paces: eager 2 ms, compiled 1 ms on a fast host; on a slow host eager
    takes 3.2 ms while compiled stops at 1.3 ms (its kernels' floor). Each turn's ratio is
    taken within the turn, and the speed-up is their median."""
    fns = {"eager": lambda slow: 3.2 if slow else 2.0,
           "compiled": lambda slow: 1.3 if slow else 1.0}
    series = interleaved(fns, ScriptedClock(), calls=1, blocks=30)
    speed = series["speedup"]
    assert speed["pairs"] == 30 and speed["median"] == pytest.approx(2.0)
    assert speed["low"] == pytest.approx(2.0) and speed["high"] == pytest.approx(3.2 / 1.3)
    assert series["eager"]["samples"] == series["compiled"]["samples"] == 30


class SlowClock:
    """Blocks that take 5 ms of wall time each, whatever was planned (a loaded machine)."""

    def block(self, fn, calls, before=None):
        time.sleep(0.005)
        return 1.0


def test_a_series_slowed_by_other_work_stops_after_the_least_turns_a_verdict_needs():
    """Planned on a quick probe, 60 blocks of a 50 us call took 41 s on a loaded machine."""
    from compiler_core.runtime.measure.clocks import MIN_BLOCKS
    from compiler_core.runtime.measure.verdict import MIN_PAIRS
    series = interleaved({"eager": None, "compiled": None}, SlowClock(), calls=1, blocks=60,
                         max_s=0.02)
    assert series["speedup"]["pairs"] == MIN_BLOCKS >= MIN_PAIRS


class ProbedClock:
    """Calls of `device_ms` on the device whose launches take `host_ms`; the first probe of
    each function stalls on the host as long as the call (an allocator's synchronizing free)."""

    def __init__(self, device_ms, host_ms):
        self.device_ms, self.host_ms, self.probed = device_ms, host_ms, set()

    def probe(self, fn, calls):
        stalled = fn not in self.probed
        self.probed.add(fn)
        return self.device_ms, self.device_ms if stalled else self.host_ms


def test_calls_the_host_paces_are_sampled_over_seconds():
    fns = {"eager": "eager", "compiled": "compiled"}
    gpu_bound = plan_per_call(fns, ProbedClock(device_ms=1.0, host_ms=0.1))
    host_bound = plan_per_call(fns, ProbedClock(device_ms=2.0, host_ms=1.9))
    tiny = plan_per_call(fns, ProbedClock(device_ms=0.02, host_ms=0.02))
    assert not gpu_bound["host_bound"] and host_bound["host_bound"] and tiny["host_bound"]
    assert gpu_bound["turns"] == MIN_TURNS  # 20 ms turns: 0.8 s, over the 0.4 s budget
    span_s = host_bound["turns"] * host_bound["calls_per_turn"] * 2 * 2e-3
    assert HOST_BOUND_S - 0.1 <= span_s <= HOST_BOUND_S
    assert host_bound["calls_per_turn"] == 10  # a turn: about 20 ms of one function's calls
    assert tiny["calls_per_turn"] * tiny["turns"] == MAX_CALLS


class FakeKernel:
    """A CachingAutotuner without a compiled kernel: `run` is the test's, `clone_args` the real
    one (Inductor's: copies of the arguments named in `mutated_arg_names`)."""

    def __new__(cls, name, arg_names, mutated=()):
        from torch._inductor.runtime.triton_heuristics import CachingAutotuner
        kernel = CachingAutotuner.__new__(CachingAutotuner)
        kernel.fn = type("Fn", (), {"__name__": name, "arg_names": arg_names})()
        kernel.mutated_arg_names = list(mutated)
        return kernel


def test_launch_capture_keeps_each_kernels_first_launch(monkeypatch):
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    from compiler_core.runtime.measure.alone import capture_launches, moved_bytes

    monkeypatch.setattr(CachingAutotuner, "run", lambda self, *args, **kwargs: None)
    first = FakeKernel("triton_poi_a", ["in_ptr0", "in_ptr1", "xnumel"])
    second = FakeKernel("triton_red_b", ["in_out_ptr0", "xnumel"], mutated=["in_out_ptr0"])

    def call():
        first.run(torch.empty(10), torch.empty(5, dtype=torch.float64), 10, stream=0)
        second.run(torch.empty(4, 4, dtype=torch.bfloat16), 16, stream=0)
        first.run(torch.empty(1), stream=0)  # a second launch: the first one counts
    launches = capture_launches(call)
    # 40 + 40 bytes read; the in_out_ptr's 32 bytes read and written
    assert {name: moved_bytes(launch) for name, launch in launches.items()} == {
        "triton_poi_a": 80, "triton_red_b": 64}
    launch = launches["triton_poi_a"]
    assert launch.autotuner is first and launch.args[2] == 10 and launch.kwargs == {"stream": 0}
    assert launch.mutated() == []
    ((live, copy),) = launches["triton_red_b"].mutated()
    assert live is launches["triton_red_b"].args[0] and copy is not live


def test_a_kernel_that_changes_its_arguments_is_timed_alone_on_them_as_they_were(monkeypatch):
    """An in-place kernel launched alone again and again would otherwise run on what the launch
    before left (a matmul's in-place GELU epilogue on its own output)."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    from compiler_core.runtime.measure.alone import LAUNCHES, capture_launches, time_alone

    seen = []

    def run(self, buffer, n, stream=None):
        seen.append(buffer[0].item())
        buffer.add_(1)
    monkeypatch.setattr(CachingAutotuner, "run", run)
    kernel = FakeKernel("triton_poi_fused_add_gelu_0", ["in_out_ptr0", "xnumel"],
                        mutated=["in_out_ptr0"])
    buffer = torch.zeros(4)
    launches = capture_launches(lambda: kernel.run(buffer, 4, stream=0))
    flushes = []

    class Clock:
        def per_call(self, fn, calls, before):
            out = []
            for _ in range(calls):
                before()
                fn()
                out.append(1e-3)
            return out
    assert time_alone(launches, Clock(), flush=lambda: flushes.append(1)) == {
        "triton_poi_fused_add_gelu_0": 1.0}
    assert seen == [0.0, 1.0] + [0.0] * LAUNCHES  # the call's launch, the warm-up, the timed
    assert len(flushes) == LAUNCHES


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


def test_correctness_is_judged_against_float64_as_the_benchmark_runner_does():
    torch.manual_seed(0)
    exact = torch.randn(4096, dtype=torch.float64)
    eager = (exact + 1e-3 * torch.randn(4096, dtype=torch.float64)).float()
    reordered = (exact + 1e-3 * torch.randn(4096, dtype=torch.float64)).float()
    assert compare(eager, reordered)["ok"] is False  # a fixed tolerance calls it a mismatch
    judged = verdict(eager, reordered, exact)
    assert judged["ok"] is True and judged["reference"] == "float64"
    assert judged["rmse_vs_float64"]["compiled"] == pytest.approx(1e-3, rel=0.2)
    wrong = verdict(eager, eager + 0.05, exact)
    assert wrong["ok"] is False and wrong["max_abs"] == pytest.approx(0.05, rel=1e-3)
    assert verdict(eager, reordered, None)["reference"] == "eager"


def test_a_launch_bound_call_is_labelled_as_such():
    """Busy shares as the H200 measured them: ResNet-18 (GPU busy 46 % of the eager call) is
    launch-bound, a fused softmax (100 %) is not."""
    resnet = {"totals": {"eager": {"busy_share": 0.458}, "compiled": {"busy_share": 0.395}}}
    softmax = {"totals": {"eager": {"busy_share": 1.0}, "compiled": {"busy_share": 0.99}}}
    [note] = launch_bound_notes(resnet)
    assert "Launch-bound" in note and "eager 46 %" in note and "compiled 40 %" in note
    assert launch_bound_notes(softmax) == []


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


def test_timings_call_compiled_modules_without_torchbolts_hooks():
    """The recording hooks come off a compiled module once the script has ended: with them, a
    small module's compiled calls took 13 % longer, and its speed-up read that much lower."""
    from compiler_core.runtime.callables import CompileRecorder

    class Writer:
        def emit(self, *args, **fields):
            pass
    recorder = CompileRecorder(Writer(), {"backend": "eager"}, "script.py")
    compiled = recorder.compile(torch.nn.Linear(4, 4))
    compiled(torch.randn(2, 4))
    (entry,) = recorder.callables
    assert len(entry.signatures) == 1 and compiled._forward_pre_hooks and compiled._forward_hooks
    recorder.remove_hooks()
    assert not compiled._forward_pre_hooks and not compiled._forward_hooks
    compiled(torch.randn(3, 4))  # a new signature: no longer recorded
    assert len(entry.signatures) == 1


def test_no_call_is_timed_after_the_profiler_ran(monkeypatch):
    """Every call's series come before any profiler session: after one, CUPTI stays attached
    and launches cost more (PyTorch issue 144455), so a later series would read slower."""
    import contextlib

    from compiler_core.runtime.callables import CompileRecorder
    from compiler_core.runtime.measure import timing

    records, order = [], []

    class Session:
        paused = staticmethod(contextlib.nullcontext)

        class writer:
            @staticmethod
            def emit(record, *args, **fields):
                if record == "timing":
                    records.append(fields)

    def spy(name, real):
        def call(*args, **kwargs):
            order.append(name)
            return real(*args, **kwargs)
        monkeypatch.setattr(timing, real.__name__, call)
    spy("series", timing.end_to_end)
    spy("profiler", timing.profile_cpu)
    recorder = CompileRecorder(Session.writer, {"backend": "eager"}, "script.py")
    first, second = recorder.compile(torch.sin), recorder.compile(torch.cos)
    first(torch.randn(8)), second(torch.randn(8))
    timing.measure_all(recorder, Session(), "cpu")
    assert order == ["series", "series", "profiler", "profiler", "profiler", "profiler"]
    assert [r["callable"] for r in records] == [0, 1]
    assert all(r["e2e"]["warm"]["speedup"] and r["kernels"]["totals"] for r in records)
    assert list(records[0]["phases_s"]) == ["correctness", "series", "kernels"]


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


def cpu_totals(wall_us, recorded_us, busy_us, events=26, contention=None):
    return {"wall_us_per_call": wall_us, "recorded_us_per_call": recorded_us,
            "us_per_call": busy_us, "events_per_call": events,
            "contention": contention or {"busy": None}}


def test_a_profile_that_contradicts_its_call_is_withheld_with_its_figures():
    """Issue 40's masked self-attention block: 207 ms of kernels per call in a call timed at
    0.367 ms. A profile whose rows add up to more than its calls took, or whose calls ran far
    slower than the timed calls, or ran while the machine was busy, is not a breakdown of the
    call: its times are withheld, and the reason gives the figures."""
    from compiler_core.runtime.measure.profile import withheld_reason
    assert withheld_reason(cpu_totals(90.0, 70.0, 40.0), e2e_ms=0.060) is None
    slower = withheld_reason(cpu_totals(208e3, 207e3, 207e3), e2e_ms=0.367)
    assert slower and "208 ms" in slower and "367 µs" in slower
    more = withheld_reason(cpu_totals(100.0, 250.0, 200.0), e2e_ms=0.1)
    assert more and "250 µs" in more and "100 µs" in more
    busy = withheld_reason(cpu_totals(90.0, 70.0, 40.0, contention={
        "busy": "the machine was busy: the job's threads waited for a CPU 95 % of the time"}),
        e2e_ms=0.060)
    assert busy and "95 %" in busy


def test_gpu_kernels_longer_than_the_call_are_withheld():
    from compiler_core.runtime.measure.profile import ADD_UP_TOLERANCE, withheld_reason
    assert withheld_reason({"us_per_call": 90.0}, e2e_ms=0.1) is None
    over = withheld_reason({"us_per_call": 100e3 * (1 + 2 * ADD_UP_TOLERANCE)}, e2e_ms=100.0)
    assert over and "ms" in over


def test_a_withheld_profile_has_no_figure():
    from compiler_core.present.plots import kernel_figure
    row = {"name": "aten::mm", "us_per_call": 1.0}
    kernels = {"eager": [row], "compiled": [], "cache": "warm (CPU)",
               "totals": {"eager": {"us_per_call": 1.0, "wall_us_per_call": 2.0},
                          "compiled": {"withheld": "the machine was busy (95 %)"}}}
    assert kernel_figure(kernels, "cpu") is None


def test_a_cpu_profile_keeps_its_least_disturbed_round(monkeypatch):
    """A thread's wait for a CPU inside an op lands in that op's time: of several profiled
    rounds, the one with the least time per call is kept, and its own time is the call's."""
    from compiler_core.runtime.measure import profile
    rounds = []
    real = profile._profiled_round

    def counted(fn, calls):
        rounds.append(len(rounds))
        return real(fn, calls)
    monkeypatch.setattr(profile, "_profiled_round", counted)

    def call():
        torch.ones(4).add_(1)
        if len(rounds) != 2:  # the first and third rounds stall 20 ms a call
            time.sleep(0.02)
    kept = profile.profile_cpu(call, calls=3, rounds=3)
    assert len(rounds) == 3 and kept["wall_us_per_call"] < 10e3
    add = next(r for r in kept["rows"] if r["name"] == "aten::add_")
    assert add["launches"] == 1 and add["us_per_call"] <= kept["wall_us_per_call"]


# Contention: measured on every timed span; a verdict only where the machine was quiet enough.

def test_a_thread_waiting_for_a_cpu_is_measured_as_contention():
    """A busy process pinned to the same CPU as the timed span: the span's thread waits on the
    run queue about half the time, and the figure says so (more load only raises it)."""
    import multiprocessing
    import os

    from compiler_core.runtime.measure.contention import BUSY_WAIT_SHARE, Watch
    cpu = min(os.sched_getaffinity(0))
    saved = os.sched_getaffinity(0)
    ctx = multiprocessing.get_context("fork")
    hog = ctx.Process(target=_spin_on, args=(cpu, 3.0), daemon=True)
    hog.start()
    try:
        os.sched_setaffinity(0, {cpu})
        time.sleep(0.05)
        with Watch() as watch:
            deadline = time.perf_counter() + 0.4
            while time.perf_counter() < deadline:
                pass
    finally:
        os.sched_setaffinity(0, saved)
        hog.kill()
        hog.join()
    figures = watch.figures
    assert figures["wait_share"] > BUSY_WAIT_SHARE and figures["threads"] >= 1
    assert figures["busy"].startswith("the machine was busy") and "for a CPU per second" in figures["busy"]


def _spin_on(cpu, seconds):
    import os
    os.sched_setaffinity(0, {cpu})
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        pass


def series_of(ratios, busy=None):
    import statistics
    q1, median, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    return {"speedup": {"median": median, "low": q1, "high": q3, "pairs": len(ratios)},
            "contention": {"busy": busy, "wait_share": 0.9 if busy else 0.01}}


def test_a_verdict_rests_on_enough_quiet_paired_turns():
    """Issue 40: 'compiled is slower, about 2.0x' from 5 paired turns on a loaded machine."""
    from compiler_core.runtime.measure.verdict import MIN_PAIRS, judge
    assert judge(series_of([0.5] * 5))["outcome"] == "too_few"
    assert "5 paired turns" in judge(series_of([0.5] * 5))["reason"]
    busy = judge(series_of([0.5] * 30, busy="the machine was busy: 95 %"))
    assert busy["outcome"] == "busy" and "95 %" in busy["reason"]
    assert judge(series_of([0.5] * MIN_PAIRS))["outcome"] == "slower"
    assert judge(series_of([2.0] * 30))["outcome"] == "faster"
    assert judge(series_of([0.8, 1.2] * 15))["outcome"] == "within_noise"
    assert judge({"speedup": None})["outcome"] == "not_reported"


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


def test_a_gpu_series_says_when_the_power_cap_held_its_clock():
    """NVML samples (SM MHz, W, clock-event reasons) -> the series' clock figures; a sentence
    only where the power cap held the clock in most samples (0x4: NVML's SwPowerCap)."""
    capped = summarise([(1590, 686.0, 0x4), (1455, 684.0, 0x4), (1620, 690.0, 0x0)], 1980, 700)
    assert (capped["sm_mhz"], capped["power_w"]) == (1590, 686.0)
    assert abs(capped["power_capped_share"] - 2 / 3) < 1e-9
    assert "1590 of 1980 MHz" in capped["note"] and "700 W power cap" in capped["note"]
    assert "67 % of the samples" in capped["note"]
    free = summarise([(1980, 400.0, 0x0), (1965, 420.0, 0x4), (1970, 410.0, 0x0)], 1980, 700)
    assert free["note"] is None and free["sm_mhz"] == 1970
    assert summarise([], 1980, 700)["sm_mhz"] is None


def test_without_nvml_a_gpu_series_says_why_it_has_no_clock(monkeypatch):
    """Where NVML can't be loaded (this CPU venv has no pynvml), the figures say so."""
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    with GpuClockWatch(0) as watch:
        pass
    assert watch.figures["sm_mhz"] is None and "NVML unavailable" in watch.figures["why_none"]
