"""Clocks and sampling: end-to-end times as medians and IQRs, eager and compiled interleaved.

CPU: the host clock, over blocks of calls. GPU: CUDA events on the launching stream, either
around each call (`per_call`, the way `triton.testing.do_bench` times: a pair of events per
call, the calls queued one after another, optionally something such as an L2 flush before
each) or around blocks of back-to-back calls. Eager and compiled alternate, so that drift hits
both alike; the device's peak rates (copy bandwidth, bf16 matmul) are measured on the device.
"""

from __future__ import annotations

import math
import statistics
import time

import torch

from .contention import Watch

# End-to-end timing of one series group (seconds). GPU: do_bench's default is 0.1 s a series;
# 0.4 s keeps each small job's full result within about 3 s.
BUDGET_S = {"cpu": 1.0, "cuda": 0.4}
# One sample: calls lasting at least this long. On a GPU, long enough that the launch overhead
# of a sample's first call (exposed after the synchronize before it) is amortised: with 2 ms,
# compiled calls of ~140 us read up to 15 % slow on the H200.
BLOCK_S = {"cpu": 5e-3, "cuda": 20e-3}
MIN_BLOCKS, MAX_BLOCKS = 10, 60  # at least `verdict.MIN_PAIRS` paired turns


class CpuClock:
    label = "host wall clock (time.perf_counter)"

    def block(self, fn, calls: int, before=None) -> float:
        """Milliseconds per call over `calls` back-to-back calls."""
        if before:
            before()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - start) * 1e3 / calls


class CudaClock:
    label = "CUDA events on the launching stream"

    def __init__(self) -> None:
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def per_call(self, fn, calls: int, before=None) -> list[float]:
        """Milliseconds of each of `calls` calls, each between its own pair of events."""
        pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                 for _ in range(calls)]
        torch.cuda.synchronize()
        for start, end in pairs:
            if before:
                before()  # enqueued before the start event: outside the timed span
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) for start, end in pairs]

    def probe(self, fn, calls: int) -> tuple[float, float]:
        """Milliseconds per call over `calls` back-to-back calls: on the device (events), and
        on the host until the last launch returned (the host's share of the call)."""
        torch.cuda.synchronize()
        started = time.perf_counter()
        self.start.record()
        for _ in range(calls):
            fn()
        host_ms = (time.perf_counter() - started) * 1e3 / calls
        self.end.record()
        self.end.synchronize()
        return self.start.elapsed_time(self.end) / calls, host_ms

    def block(self, fn, calls: int, before=None) -> float:
        torch.cuda.synchronize()
        if before:
            before()  # enqueued before the start event: outside the timed span
        stream = torch.cuda.current_stream()
        self.start.record(stream)
        for _ in range(calls):
            fn()
        self.end.record(stream)
        self.end.synchronize()
        return self.start.elapsed_time(self.end) / calls


def summary(samples_ms: list[float]) -> dict:
    q1, median, q3 = statistics.quantiles(samples_ms, n=4, method="inclusive")
    return {"median_ms": median, "q1_ms": q1, "q3_ms": q3, "iqr_ms": q3 - q1,
            "min_ms": min(samples_ms), "samples": len(samples_ms)}


def paired_speedup(reference: list[list[float]], candidate: list[list[float]]) -> dict:
    """reference / candidate per turn (each turn's median against its neighbour's), then the
    median and quartiles of those ratios. On the H200 machine the host's speed drifts in
    episodes of seconds (a launch-bound ResNet-18's eager call: p10 1.7 ms, p90 2.6 ms), and
    the speed-up of a call the host paces changes with them; paired turns see the same host.
    Over 4 s windows their ratios' median was within 5 % of a 40 s run's in 93-100 % of
    windows, the ratio of the two medians in 85 % (`bench/host_drift.py`)."""
    ratios = [statistics.median(r) / statistics.median(c) for r, c in zip(reference, candidate)]
    q1, median, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    return {"median": median, "low": q1, "high": q3, "pairs": len(ratios),
            "how": "median of per-turn ratios, eager and compiled turns side by side; range: "
                   "their quartiles"}


def _alternating(fns: dict, turns: int, take, max_s: float | None = None) -> dict:
    """`take(fn)` (a list of samples) for each function in turn, the order alternating each
    turn, so that drift hits all alike; a summary per function, the first function's speed-up
    over the second, paired turn by turn, and how busy the machine was meanwhile. Past `max_s`
    seconds, no new turn starts once `MIN_BLOCKS` turns are done."""
    samples = {name: [] for name in fns}
    order = list(fns)
    with Watch() as watch:
        started = time.perf_counter()
        for i in range(turns):
            if max_s and i >= MIN_BLOCKS and time.perf_counter() - started > max_s:
                break
            for name in (order if i % 2 == 0 else order[::-1]):
                samples[name].append(take(fns[name]))
    out = {name: summary([x for turn in values for x in turn])
           for name, values in samples.items()}
    return {**out, "speedup": paired_speedup(*samples.values()), "contention": watch.figures}


def interleaved(fns: dict, clock, calls: int, blocks: int, before=None,
                max_s: float | None = None) -> dict:
    """One sample a turn: a block of `calls` back-to-back calls, per call. `max_s`: see
    `_alternating` (a loaded machine can make the planned blocks last many times longer: a
    1 s series of a 50 us call took 41 s)."""
    return _alternating(fns, blocks, lambda fn: [clock.block(fn, calls, before)], max_s)


def interleaved_per_call(fns: dict, clock: CudaClock, calls: int, turns: int,
                         before=None) -> dict:
    """`calls` samples a turn: each call timed on its own (`CudaClock.per_call`)."""
    return _alternating(fns, turns, lambda fn: clock.per_call(fn, calls, before))


# Per-call series on a GPU: a turn is one function's calls for about TURN_S, so that paired
# turns are close in time; at least MIN_TURNS turns over BUDGET_S["cuda"] or, for calls whose
# launches take at least DRIFT_SHARE of their device-side span, over DRIFT_S: the host's slow
# episodes last seconds, can make such a call host-paced, and a shorter series can fall inside
# one (`bench/host_drift.py`). A call is host-bound where its launches take nearly all of its
# device-side span (HOST_BOUND_SHARE): the span waits for the last launch, so the share
# approaches 1 and no further once the device waits for the host. On an H100, ResNet-18's
# eager call (batch 8) read 0.994 while the profiler saw the GPU busy 24 % of back-to-back
# calls; the pointwise chain's compiled call read 0.20-0.51 with the GPU busy 99 %. At most
# MAX_CALLS calls a function: tiny calls cost their events more than their own time, and a
# small job's full result should come within about 3 s.
TURN_S, MIN_TURNS, MAX_CALLS_PER_TURN, MAX_CALLS = 0.02, 20, 50, 3200
DRIFT_SHARE, DRIFT_S, HOST_BOUND_SHARE = 0.5, 3.0, 0.9


def host_share(probes: list[tuple[float, float]]) -> float:
    """The host's time for a call's launches over its device-side time: the least of the
    probes (`CudaClock.probe`), since one can include a stall that is not the call's (e.g. the
    allocator freeing its cache after the accuracy check's float64 copies)."""
    return min(host_ms / max(device_ms, 1e-4) for device_ms, host_ms in probes)


def plan_per_call(fns: dict, clock: CudaClock) -> dict:
    """Calls per turn and turns for `interleaved_per_call`, whether they span DRIFT_S
    (`long_span`) and whether the host paces a function's calls (`host_bound`), with each
    function's host share (see above): three probes of three calls each."""
    probes = [[clock.probe(fn, 3) for _ in range(3)] for fn in fns.values()]
    per_call_s = [max(runs[-1][0], 1e-4) / 1e3 for runs in probes]
    shares = {name: host_share(runs) for name, runs in zip(fns, probes)}
    largest = max(shares.values())
    calls = min(MAX_CALLS_PER_TURN, max(1, math.ceil(TURN_S / max(per_call_s))))
    span_s = DRIFT_S if largest >= DRIFT_SHARE else BUDGET_S["cuda"]
    turns = min(int(span_s / (calls * sum(per_call_s))), MAX_CALLS // calls)
    return {"calls_per_turn": calls, "turns": max(MIN_TURNS, turns),
            "long_span": largest >= DRIFT_SHARE, "host_bound": largest >= HOST_BOUND_SHARE,
            "host_share": {name: round(share, 3) for name, share in shares.items()}}


def plan(fns: dict, clock, device: str) -> tuple[int, int]:
    """Calls per sample and number of samples that fit the budget. Each function's time is
    the least of 3 calls: one call can stall on a loaded machine, and a tiny call taken for a
    slow one got 5 samples."""
    per_call_s = max(min(clock.block(fn, 1) for _ in range(3)) for fn in fns.values()) / 1e3
    calls = max(1, math.ceil(BLOCK_S[device] / max(per_call_s, 1e-7)))
    blocks = int(BUDGET_S[device] / (len(fns) * calls * max(per_call_s, 1e-7)))
    return calls, min(MAX_BLOCKS, max(MIN_BLOCKS, blocks))


# Memory bandwidth from NVIDIA's data sheets (GB/s), by a part of the device name; first match.
BANDWIDTH_SPECS = (("H200", 4800), ("H100 PCIe", 2000), ("H100", 3350),
                   ("A100-SXM4-80GB", 2039), ("A100 80GB PCIe", 1935), ("A100", 1555),
                   ("L40S", 864), ("L4", 300), ("RTX 4090", 1008))


def measure_peaks(clock: CudaClock) -> dict:
    """Device copy bandwidth (1 GiB) and dense bf16 matmul rate (8192^3), measured now; the
    bandwidth peak is the data sheet's where known (a copy kernel reaches less)."""
    source = torch.randn(2**28, device="cuda")
    target = torch.empty_like(source)
    copy_ms = min(clock.block(lambda: target.copy_(source), 5) for _ in range(3))
    a, b = (torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    mm_ms = min(clock.block(lambda: a @ b, 5) for _ in range(3))
    copy_gbps = 2 * source.nbytes / (copy_ms * 1e-3) / 1e9
    name = torch.cuda.get_device_name()
    spec = next((gbps for part, gbps in BANDWIDTH_SPECS if part in name), None)
    return {"copy_gbps": copy_gbps, "bf16_tflops": 2 * 8192**3 / (mm_ms * 1e-3) / 1e12,
            "bandwidth_gbps": spec or copy_gbps,
            "bandwidth_source": f"data sheet ({name})" if spec else "measured copy bandwidth",
            "how": "measured on this device at job time: 1 GiB device copy (bytes read and "
                   "written), 8192^3 bf16 matmul on random data; % of peak bandwidth is "
                   + (f"of the data sheet's {spec} GB/s" if spec else
                      "of the measured copy (no data-sheet figure known for this device)")}
