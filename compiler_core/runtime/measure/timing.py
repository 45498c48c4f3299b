"""Measured timings: each compiled callable, eager against compiled, on the arguments it was
called with (job process side, after the script ran).

Per recorded call (`CompileRecorder`: up to 4 argument signatures per callable):
- the call as the script made it (`replay`: its arguments and grad mode, and a backward only
  where the script ran one through its outputs; never a compile), named in `timed`, and
  correctness first (`accuracy`, as PyTorch's benchmark runner judges it): a mismatch is
  reported as a mismatch, never as a speed-up;
- end to end (`clocks`), eager and compiled interleaved, median and IQR per call, after warm-up;
  the speed-up is the median of paired turns' ratios, with their quartiles, and how busy the
  machine was meanwhile (`contention`); a verdict only from enough turns on a quiet machine
  (`verdict`).
  CPU: blocks of calls. GPU, the first series is the one to compare with do_bench: `warm`, each
  call between its own CUDA events (L2 as the previous call left it); then `cold` (the same
  with L2 flushed before each call), `throughput` (blocks of back-to-back calls) and
  `cudagraphs` (the callable compiled again with mode="reduce-overhead", labelled as such);
- per kernel (`profile`, `alone`, `rates`): profiler rows in the call, each Triton kernel also
  timed alone as do_bench times it, with bytes and FLOP rates; a side whose rows do not fit in
  its call is withheld with the figures why; the compiled graphs the call ran (`replayed`).
The steps run over all of a job's calls in turn (`STEPS`): the profiler last.
"""

from __future__ import annotations

import contextlib
import time

import torch

from ...present.plots import kernel_figure, roofline_figure
from .alone import capture_launches, time_alone
from .clocks import (BUDGET_S, CpuClock, CudaClock, interleaved, interleaved_per_call,
                     measure_peaks, plan, plan_per_call)
from .accuracy import check, fp64_reference, verdict
from .gpu_clock import GpuClockWatch, clocks_note
from .inputs import backward_grads, caller
from .lock import held
from .profile import PROFILE_ROUNDS, profile_cpu, profile_cuda, top, totals
from .rates import add_rates, kernel_estimates
from .replay import Replay, untimed_reason
from .verdict import judge

SERIES_MAX_S = 3  # a series of blocks stops adding turns past 3 times its budget
PROFILED_CALLS = 10  # a round's (CPU: the least disturbed of `PROFILE_ROUNDS` rounds)
TOTAL_BUDGET_S = 60.0


class Device:
    """The clock, L2 flush and peak rates of the job's device (peaks measured once, on use)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.clock = CudaClock() if kind == "cuda" else CpuClock()
        self._flush = self._peaks = None

    @property
    def flush(self):
        if self._flush is None:
            from ..gpu.l2_flush import L2Flush
            self._flush = L2Flush()
        return self._flush

    @property
    def peaks(self) -> dict | None:
        if self.kind != "cuda":
            return None
        if self._peaks is None:
            self._peaks = measure_peaks(self.clock)
        return self._peaks


def reduce_overhead(entry, real_compile, args, kwargs, grads):
    """The callable compiled again with CUDA graphs, warmed up (its compile is not timed)."""
    graphed = real_compile(entry.original, mode="reduce-overhead")
    call = caller(graphed, args, kwargs, grads)

    def step():
        torch.compiler.cudagraph_mark_step_begin()
        return call()
    for _ in range(3):
        step()
    return step


COLD_TURNS = 10  # a secondary series: its flushes cost a tiny call's job the most time


def end_to_end(calls: dict, device: Device, replay: Replay) -> dict:
    """The series, the one to compare first (`warm`) first. A callable that changes its inputs
    gets them restored before each sample, outside the timed span."""
    if device.kind == "cuda":
        return _gpu_series(calls, device, replay)
    return {"warm": _blocks(calls, device, replay)}


def _blocks(calls: dict, device: Device, replay: Replay) -> dict:
    """Blocks of back-to-back calls, per call = block / calls (one call a block when the
    inputs must be restored before each)."""
    n, blocks = plan(calls, device.clock, device.kind)
    n = 1 if replay.mutates else n
    return {**interleaved(calls, device.clock, n, blocks,
                          before=replay.restore if replay.mutates else None,
                          max_s=SERIES_MAX_S * BUDGET_S[device.kind]),
            "calls_per_sample": n}


def _gpu_series(calls: dict, device: Device, replay: Replay) -> dict:
    """warm: each call between its own CUDA events, queued one after another (do_bench's way),
    L2 as the call before left it, over a longer span where the host's share of the calls is
    large (see `plan_per_call`); cold: the same with L2 flushed before each call (do_bench's own
    treatment), in `COLD_TURNS` turns; throughput: blocks of back-to-back calls."""
    clock, restore = device.clock, (replay.restore if replay.mutates else None)

    def cold():
        replay.restore()
        device.flush()
    planned = plan_per_call(calls, clock)
    per_turn, turns = planned["calls_per_turn"], planned["turns"]

    def clocked(turns_, before) -> dict:
        """The series, with the clock the GPU ran it at (`gpu_clock`: the power cap)."""
        with GpuClockWatch(torch.cuda.current_device()) as watch:
            series = interleaved_per_call(calls, clock, per_turn, turns_, before=before)
        return {**series, "gpu_clock": watch.figures}
    out = {"warm": {**clocked(turns, restore),
                    "calls_per_sample": 1, **{key: planned[key] for key in (
                        "host_bound", "long_span", "host_share")},
                    "how": "each call timed on its own (CUDA events), calls queued one after "
                    "another; L2 as the previous call left it"},
           "cold": {**clocked(COLD_TURNS, cold),
                    "calls_per_sample": 1, "l2_flush_bytes": device.flush.bytes,
                    "how": "as warm, with L2 flushed before each call (as do_bench does)"}}
    out["throughput"] = {**_blocks(calls, device, replay), "how": "blocks of back-to-back "
                         "calls between two events: per call = block / calls"}
    return out


def cuda_graph_series(eager, graphed, device: Device, replay: Replay) -> dict:
    """The callable compiled again with mode="reduce-overhead" (`reduce_overhead`) against
    eager."""
    return {**_blocks({"eager": eager, "cudagraphs": graphed}, device, replay),
            "label": "compiled with mode='reduce-overhead' (CUDA graphs)"}


def kernels_alone(calls: dict, device: Device) -> tuple[dict, dict]:
    """The compiled call's Triton launches and each one's time alone."""
    launches = capture_launches(calls["compiled"])
    return launches, time_alone(launches, device.clock, device.flush)


def per_kernel(calls: dict, device: Device, e2e: dict, launches: dict,
               alone: dict) -> tuple[dict, list[str]]:
    """Per side, the profiler's rows (none where its times are withheld: `totals` says why)
    and their totals; and the compiled graphs the profiled compiled calls ran."""
    clocks = {}
    if device.kind == "cuda":
        profiles = {}
        for name, fn in calls.items():
            with GpuClockWatch(torch.cuda.current_device()) as watch:
                profiles[name] = profile_cuda(fn, PROFILED_CALLS, device.flush)
            clocks[name] = watch.figures
        add_rates(profiles["compiled"]["rows"], kernel_estimates(launches), device.peaks, alone)
        add_rates(profiles["eager"]["rows"], {}, device.peaks)
        cache = ("in the call: L2 flushed before each call, so a kernel later in the call finds "
                 "in L2 what the kernels before it wrote; alone (Triton kernels): each launch "
                 "on its own after an L2 flush, as do_bench times a kernel")
    else:
        profiles = {name: profile_cpu(fn, PROFILED_CALLS) for name, fn in calls.items()}
        cache = "warm (CPU)"
    basis = "cold" if device.kind == "cuda" else "warm"
    out = {"calls_profiled": PROFILED_CALLS, "cache": cache, "totals": {}}
    if device.kind != "cuda":
        out["rounds"] = PROFILE_ROUNDS
    for name, profile in profiles.items():
        out["totals"][name] = totals(profile, e2e[basis][name]["median_ms"])
        if name in clocks:
            out["totals"][name]["gpu_clock"] = clocks[name]
        out[name] = [] if out["totals"][name].get("withheld") else top(profile["rows"])
    out["units"] = {name: profile["units"] for name, profile in profiles.items()}
    out["units_s"] = round(sum(profile["units_s"] for profile in profiles.values()), 4)
    return out, profiles["compiled"]["regions"]


class CallTiming:
    """One recorded call's timing, built in steps (`STEPS`, see `measure_all`)."""

    def __init__(self, entry, call, device: Device, real_compile, compile_id) -> None:
        self.entry, self.device, self.real_compile = entry, device, real_compile
        self.compile_id = compile_id  # PyTorch's compile id -> the result's (a reset's)
        self.replay = Replay(call)
        self.phases = Phases()

    def correctness(self) -> None:
        """The replay's probe, correctness and warm-up."""
        entry, replay = self.entry, self.replay
        with self.phases.timed("correctness"):
            replay.probe(entry.compiled)
            with replay.grad_context():
                self.verdict = check(entry.original, entry.compiled, replay)
                self.grads = None
                if replay.grad_mode == "grad" and replay.backward:
                    self.grads = backward_grads(entry.original, *replay.fresh_copies())
                self.calls = {side: caller(fn, replay.args, replay.kwargs, self.grads)
                              for side, fn in (("eager", entry.original),
                                               ("compiled", entry.compiled))}
                for fn in list(self.calls.values()) * 3:  # warm-up
                    fn()

    def alone(self) -> None:
        """Each Triton kernel alone (GPU)."""
        self.launches, self.alone_us = {}, {}
        if self.device.kind == "cuda":
            with self.phases.timed("alone"), self.replay.grad_context():
                self.launches, self.alone_us = kernels_alone(self.calls, self.device)

    def series(self) -> None:
        with self.phases.timed("series"), self.replay.grad_context():
            self.e2e = end_to_end(self.calls, self.device, self.replay)

    def cudagraphs_compile(self) -> None:
        if self.device.kind != "cuda":
            return
        with self.phases.timed("cudagraphs_compile"), self.replay.grad_context():
            self.graphed = reduce_overhead(self.entry, self.real_compile, self.replay.args,
                                           self.replay.kwargs, self.grads)

    def cudagraphs(self) -> None:
        if self.device.kind != "cuda":
            return
        with self.phases.timed("cudagraphs"), self.replay.grad_context():
            self.e2e["cudagraphs"] = cuda_graph_series(self.calls["eager"], self.graphed,
                                                       self.device, self.replay)

    def kernels(self) -> None:
        with self.phases.timed("kernels"), self.replay.grad_context():
            self.kernel_rows, regions = per_kernel(
                self.calls, self.device, self.e2e, self.launches, self.alone_us)
        # The profiler's regions are named by PyTorch's ids, which start again after a reset
        self.replayed = [self.compile_id(region) for region in regions]
        for unit in (u for units in self.kernel_rows["units"].values() for u in units):
            if unit.get("graph"):
                unit["graph"] = self.compile_id(unit["graph"])

    def record(self) -> dict:
        device, e2e, kernels = self.device, self.e2e, self.kernel_rows
        notes = gpu_notes(kernels) if device.kind == "cuda" else []
        if self.verdict["ok"] is False:
            notes.append("The compiled output does not match eager: no speed-up is reported.")
            for series in e2e.values():
                series["speedup"] = None
        for series in e2e.values():
            series["verdict"] = judge(series)
        return {"device": device.kind, "clock": device.clock.label,
                "grad_mode": self.replay.grad_mode,
                "mode": "forward+backward" if self.grads is not None else "call",
                "timed": timed_label(self.replay.grad_mode, self.grads is not None),
                "replayed": self.replayed,
                "inputs": "the recorded arguments" + (
                    ", restored before each sample (the callable changes them)"
                    if self.replay.mutates else ""),
                "correctness": self.verdict, "e2e": e2e, "kernels": kernels,
                "peaks": device.peaks,
                "plots": {"kernels": kernel_figure(kernels, device.kind),
                          "roofline": roofline_figure(kernels["compiled"], device.peaks)},
                "notes": notes, "phases_s": self.phases.seconds}


def timed_label(grad_mode: str, backward: bool) -> str:
    """What one timed call ran, as the timings' headline names it: the script's call in its grad
    mode, with a backward only where the script ran backward through that call's outputs."""
    if backward:
        return "Forward and backward (grad mode)"
    if grad_mode == "grad":
        return "Forward (grad mode, no backward)"
    return f"Inference (forward, {grad_mode})"


def gpu_notes(kernels: dict) -> list[str]:
    """What a GPU timing's reader must know to read its kernels: launch-bound sides, and
    eager's and compiled's profiles taken at different clocks."""
    clocks = [kernels["totals"][side].get("gpu_clock", {}) for side in ("eager", "compiled")]
    return launch_bound_notes(kernels) + [note for note in [clocks_note(*clocks)] if note]


LAUNCH_BOUND_SHARE = 0.5


def launch_bound_notes(kernels: dict) -> list[str]:
    """A call whose kernels kept the GPU busy less than half of its time is launch-bound: its
    time is the host CPU's (Python, dispatch, launches), which on a shared host drifts (a
    ResNet-18's eager call read 1.5 and 2.3 ms a minute apart on the H200 machine)."""
    shares = {side: row.get("busy_share") for side, row in kernels["totals"].items()}
    bound = [side for side, share in shares.items()
             if share is not None and share < LAUNCH_BOUND_SHARE]
    if not bound:
        return []
    busy = ", ".join(f"{side} {100 * shares[side]:.0f} %" for side in bound)
    return [f"Launch-bound: the GPU was busy for only part of each call ({busy}), so these "
            "times measure the host CPU launching work more than the GPU; they vary with the "
            "host's speed. The CUDA-graph series shows the same kernels without launch costs."]


class Phases:
    """Seconds each phase of one measurement took (shown, so that its cost is no secret)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def timed(self, phase: str):
        started = time.perf_counter()
        yield
        self.seconds[phase] = round(time.perf_counter() - started, 3)


def warm_up(original, compiled, x) -> None:
    """Pays some of the GPU timings' first-use costs in the process's warm-up, ahead of any
    job: the L2 flush kernel's Triton compile and CUDA's lazy loading of the kernels that the
    accuracy check runs (0.27 s and 0.22 s of a fresh process on the H200). A failure here
    costs only the saving."""
    try:
        device = Device("cuda")
        call = caller(compiled, (x,), {}, None)
        verdict(original(x), call(), fp64_reference(original, (x,), {}))
        device.clock.per_call(call, 3, before=device.flush)
        device.clock.block(call, 3)
    except Exception:  # the job pays these costs itself then
        pass


# A job's calls are timed in steps, each step over every call before the next; the steps that
# leave the device or the process changed come last.
# - Kernels alone before the end-to-end series, as a user's do_bench of one kernel runs on an
#   idle GPU: timed after seconds of a bf16 matmul's series, its GELU epilogue read 58.7-64.2 us
#   alone in three H200 runs, against 55.4 us (do_bench 55.2 us) in a fresh process that had
#   run the matmul a few times only. Why is not measured: perhaps the GPU's clocks.
# - Nothing timed after a profiler session in the same process: Kineto leaves CUPTI attached
#   and every later launch costs more (PyTorch issue 144455; `bench/profiler_aftereffect.py`).
# - Nothing but the profiler after CUDA graph trees took over part of the allocator.
# The first step times nothing: other work may run meanwhile (`before_timed`).
# Only the steps that time hold the timing lock (`LOCKED_STEPS`), each on its own: with the
# checks and the CUDA-graph compile under it too, a job held the H200's lock about 2.2 s, and a
# room of 12 jobs in 20 s queued for it (full result p90 6.7 s). Those run beside other jobs'
# timings as any job's script does.
STEPS = ("correctness", "alone", "series", "cudagraphs_compile", "cudagraphs", "kernels")
LOCKED_STEPS = frozenset(("alone", "series", "cudagraphs", "kernels"))


def measure_all(recorder, session, device_kind: str, before_timed=None,
                lock_fd: int | None = None) -> None:
    """One `timing` record per compiled callable and recorded call (an error is one too);
    capture is paused (`session`), so that timing's own compiles record nothing.
    `before_timed()`, if given, runs once the first step is done, before anything is timed
    (e.g. waiting for work started before the timings). `lock_fd`: the timing lock's file,
    held (flock) by each of the `LOCKED_STEPS`."""
    device = Device(device_kind)
    deadline = time.monotonic() + TOTAL_BUDGET_S
    timings = [({"callable": entry.index, "name": entry.name, "arguments": list(signature)},
                CallTiming(entry, call, device, recorder.real_compile, session.compile_ids.of))
               for entry in recorder.callables
               for signature, call in zip(entry.signatures, entry.calls)]
    errors: dict[int, str] = {}
    calls = f"{len(timings)} call{'s' * (len(timings) != 1)}"
    for number, step in enumerate(STEPS, 1):  # a phase per step: the page says what remains
        session.writer.emit("phase", None, None, step=f"timing eager and compiled ({calls}): "
                            f"step {number} of {len(STEPS)}, {step.replace('_', ' ')}")
        if step == STEPS[1] and before_timed:
            before_timed()
        with held(lock_fd) if step in LOCKED_STEPS else contextlib.nullcontext():
            for i, (_, timing) in enumerate(timings):
                if i in errors:
                    continue
                if step == STEPS[0] and time.monotonic() > deadline:
                    errors[i] = "skipped: timing budget spent"
                    continue
                try:
                    with session.paused():
                        getattr(timing, step)()
                except Exception as exc:  # one call failing to time costs its timing only
                    errors[i] = untimed_reason(exc)
    for i, (head, timing) in enumerate(timings):
        meta = {"error": errors[i]} if i in errors else timing.record()
        session.writer.emit("timing", None, None, **head, **meta)
