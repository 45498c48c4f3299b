"""Per-kernel profiles: the launches a kernel is timed alone on, profiles withheld with their
figures where they cannot be a breakdown of the call, the kernel figure's labels, and the order
in which the timing steps call series and profiler."""

from __future__ import annotations

import time

import torch

from compiler_core.present.plots import kernel_figure
from compiler_core.runtime.measure.timing import launch_bound_notes


def test_plot_labels_escape_kernel_names():
    """Plotly's labels are text with a few HTML tags: a profiler range named by the script
    (torch.profiler.record_function) shows as text."""
    row = {"name": "<b>x</b> & y", "us_per_call": 1.0}
    kernels = {"eager": [row], "compiled": [row], "cache": "warm (CPU)",
               "totals": {"eager": {"us_per_call": 1.0}, "compiled": {"us_per_call": 1.0}}}
    trace = kernel_figure(kernels, "cpu")["data"][0]
    assert trace["name"] == "&lt;b&gt;x&lt;/b&gt; &amp; y"
    assert trace["hovertemplate"].startswith("&lt;b&gt;x&lt;/b&gt; &amp; y<br>")


def test_a_launch_bound_call_is_labelled_as_such():
    """Busy shares as the H200 measured them: ResNet-18 (GPU busy 46 % of the eager call) is
    launch-bound, a fused softmax (100 %) is not."""
    resnet = {"totals": {"eager": {"busy_share": 0.458}, "compiled": {"busy_share": 0.395}}}
    softmax = {"totals": {"eager": {"busy_share": 1.0}, "compiled": {"busy_share": 0.99}}}
    [note] = launch_bound_notes(resnet)
    assert "Launch-bound" in note and "eager 46 %" in note and "compiled 40 %" in note
    assert launch_bound_notes(softmax) == []


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
    from compiler_core.runtime.callables import CompileRecorder
    from compiler_core.runtime.measure import timing
    from stand_in_session import StandInSession

    order, session = [], StandInSession("script.py")

    def spy(name, real):
        def call(*args, **kwargs):
            order.append(name)
            return real(*args, **kwargs)
        monkeypatch.setattr(timing, real.__name__, call)
    spy("series", timing.end_to_end)
    spy("profiler", timing.profile_cpu)
    recorder = CompileRecorder(session.writer, {"backend": "eager"}, "script.py")
    first, second = recorder.compile(torch.sin), recorder.compile(torch.cos)
    first(torch.randn(8)), second(torch.randn(8))
    timing.measure_all(recorder, session, "cpu")
    records = [r["meta"] for r in session.records() if r["name"] == "timing"]
    assert order == ["series", "series", "profiler", "profiler", "profiler", "profiler"]
    assert [r["callable"] for r in records] == [0, 1]
    assert all(r["e2e"]["warm"]["speedup"] and r["kernels"]["totals"] for r in records)
    assert list(records[0]["phases_s"]) == ["correctness", "series", "kernels"]


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
