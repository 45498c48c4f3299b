"""Measured timings: each compiled callable, eager against compiled, on the arguments it was
called with (job process side, after the script ran).

Per recorded call (`CompileRecorder`: up to 4 argument signatures per callable):
- the call as the script made it (`replay`: its arguments and grad mode; never a compile), and
  correctness first (`accuracy`, as PyTorch's benchmark runner judges it): a mismatch is
  reported as a mismatch, never as a speed-up;
- end to end (`clocks`): blocks of calls timed interleaved, median and IQR per call, after
  warm-up. GPU series: `warm` (L2 as the previous call left it), `cold` (one call after an L2
  flush of 4x its size), and `cudagraphs` (the callable compiled again with
  mode="reduce-overhead", labelled as such);
- per kernel (`profile`, `rates`): profiler rows with bytes and FLOP rates.
"""

from __future__ import annotations

import time

import torch

from ...report.plots import kernel_figure, roofline_figure
from .clocks import CpuClock, CudaClock, interleaved, measure_peaks, plan, speedup
from .accuracy import check
from .inputs import backward_grads, caller
from .profile import profile_cpu, profile_cuda
from .rates import add_rates, kernel_estimates, totals
from .replay import Replay, untimed_reason

PROFILED_CALLS = 10
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


def end_to_end(calls: dict, device: Device, cudagraphs, replay: Replay) -> dict:
    """Warm (and on a GPU cold and CUDA-graph) series. A callable that mutates its inputs is
    timed one call per sample, its inputs restored before each (outside the timed span)."""
    out = {}
    n, blocks = plan(calls, device.clock, device.kind)
    restore = replay.restore if replay.mutates else None
    if restore:
        n = 1
    out["warm"] = {**interleaved(calls, device.clock, n, blocks, before=restore),
                   "calls_per_sample": n}
    if device.kind == "cuda":
        def cold():
            replay.restore()
            device.flush()
        out["cold"] = {**interleaved(calls, device.clock, 1, blocks, before=cold),
                       "calls_per_sample": 1, "l2_flush_bytes": device.flush.bytes}
        if cudagraphs is not None:
            graphed = {"eager": calls["eager"], "cudagraphs": cudagraphs}
            n, blocks = plan(graphed, device.clock, device.kind)
            n = 1 if restore else n
            out["cudagraphs"] = {**interleaved(graphed, device.clock, n, blocks, before=restore),
                                 "calls_per_sample": n,
                                 "label": "compiled with mode='reduce-overhead' (CUDA graphs)"}
    for series in out.values():
        compiled = series.get("compiled") or series.get("cudagraphs")
        series["speedup"] = speedup(series["eager"], compiled)
    return out


def per_kernel(calls: dict, device: Device, e2e: dict) -> dict:
    if device.kind == "cuda":
        rows = {name: profile_cuda(fn, PROFILED_CALLS, device.flush)
                for name, fn in calls.items()}
        estimates = kernel_estimates(calls["compiled"])
        for name in rows:
            add_rates(rows[name], estimates if name == "compiled" else {}, device.peaks)
        cache = ("cold: L2 flushed before each call; a kernel later in the call finds in L2 "
                 "what the kernels before it wrote, as in the real call")
    else:
        rows = {name: profile_cpu(fn, PROFILED_CALLS) for name, fn in calls.items()}
        cache = "warm (CPU)"
    basis = "cold" if device.kind == "cuda" else "warm"
    return {**rows, "calls_profiled": PROFILED_CALLS, "cache": cache,
            "totals": {name: totals(rows[name], e2e[basis][name]["median_ms"]) for name in rows}}


def measure_call(entry, call, device: Device, real_compile) -> dict:
    replay = Replay(call)
    replay.probe(entry.compiled)
    args, kwargs, grad_mode = replay.args, replay.kwargs, replay.grad_mode
    with replay.grad_context():
        correctness = check(entry.original, entry.compiled, replay)
        grads = None
        if grad_mode == "grad":
            grads = backward_grads(entry.original, *replay.fresh_copies())
        calls = {"eager": caller(entry.original, args, kwargs, grads),
                 "compiled": caller(entry.compiled, args, kwargs, grads)}
        for fn in list(calls.values()) * 3:  # warm-up
            fn()
        cudagraphs = None
        if device.kind == "cuda":
            cudagraphs = reduce_overhead(entry, real_compile, args, kwargs, grads)
        e2e = end_to_end(calls, device, cudagraphs, replay)
        kernels = per_kernel(calls, device, e2e)
    notes = []
    if correctness["ok"] is False:
        notes.append("The compiled output does not match eager: no speed-up is reported.")
        for series in e2e.values():
            series["speedup"] = None
    return {"device": device.kind,
            "clock": device.clock.label, "grad_mode": grad_mode,
            "mode": "forward+backward" if grads is not None else "call",
            "inputs": "the recorded arguments" + (", restored before each sample (the "
                                                  "callable changes them)" if replay.mutates
                                                  else ""),
            "correctness": correctness, "e2e": e2e, "kernels": kernels, "peaks": device.peaks,
            "plots": {"kernels": kernel_figure(kernels, device.kind),
                      "roofline": roofline_figure(kernels["compiled"], device.peaks)},
            "notes": notes}


def measure_all(recorder, session, device_kind: str) -> None:
    """One `timing` record per compiled callable and recorded call (an error is one too);
    capture is paused (`session`), so that timing's own compiles record nothing."""
    device = Device(device_kind)
    deadline = time.monotonic() + TOTAL_BUDGET_S
    for entry in recorder.callables:
        for signature, call in zip(entry.signatures, entry.calls):
            head = {"callable": entry.index, "name": entry.name, "arguments": list(signature)}
            if time.monotonic() > deadline:
                session.writer.emit("timing", None, None, **head,
                                    error="skipped: timing budget spent")
                continue
            try:
                with session.paused():
                    meta = measure_call(entry, call, device, recorder.real_compile)
            except Exception as exc:  # one callable failing to time costs its timing only
                session.writer.emit("timing", None, None, **head, error=untimed_reason(exc))
                continue
            session.writer.emit("timing", None, None, **head, **meta)
