"""Clocks and sampling: end-to-end times as medians and IQRs of interleaved blocks of calls.

CPU: the host clock. GPU: CUDA events on the launching stream. Eager and compiled are timed in
blocks of calls, alternating their order, so that drift hits both alike; the device's peak
rates (copy bandwidth, bf16 matmul) are measured on the device itself.
"""

from __future__ import annotations

import math
import statistics
import time

import torch

BUDGET_S = {"cpu": 1.0, "cuda": 1.5}  # end-to-end timing of one series group
# One sample: calls lasting at least this long. On a GPU, long enough that the launch overhead
# of a sample's first call (exposed after the synchronize before it) is amortised: with 2 ms,
# compiled calls of ~140 us read up to 15 % slow on the H200.
BLOCK_S = {"cpu": 5e-3, "cuda": 20e-3}
MIN_BLOCKS, MAX_BLOCKS = 5, 60


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


def speedup(eager: dict, compiled: dict) -> dict:
    """Median ratio, with the range its IQRs allow (eager q1 / compiled q3 .. q3 / q1)."""
    return {"median": eager["median_ms"] / compiled["median_ms"],
            "low": eager["q1_ms"] / compiled["q3_ms"], "high": eager["q3_ms"] / compiled["q1_ms"]}


def interleaved(fns: dict, clock, calls: int, blocks: int, before=None) -> dict[str, dict]:
    """Time each function in turn, alternating the order, so drift hits all alike."""
    samples = {name: [] for name in fns}
    order = list(fns)
    for i in range(blocks):
        for name in (order if i % 2 == 0 else order[::-1]):
            samples[name].append(clock.block(fns[name], calls, before))
    return {name: summary(values) for name, values in samples.items()}


def plan(fns: dict, clock, device: str) -> tuple[int, int]:
    """Calls per sample and number of samples that fit the budget."""
    per_call_s = max(clock.block(fn, 1) for fn in fns.values()) / 1e3
    calls = max(1, math.ceil(BLOCK_S[device] / max(per_call_s, 1e-7)))
    blocks = int(BUDGET_S[device] / (len(fns) * calls * max(per_call_s, 1e-7)))
    return calls, min(MAX_BLOCKS, max(MIN_BLOCKS, blocks))


def measure_peaks(clock: CudaClock) -> dict:
    """Device copy bandwidth (1 GiB) and dense bf16 matmul rate (8192^3), measured now."""
    source = torch.randn(2**28, device="cuda")
    target = torch.empty_like(source)
    copy_ms = min(clock.block(lambda: target.copy_(source), 5) for _ in range(3))
    a, b = (torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    mm_ms = min(clock.block(lambda: a @ b, 5) for _ in range(3))
    return {"copy_gbps": 2 * source.nbytes / (copy_ms * 1e-3) / 1e9,
            "bf16_tflops": 2 * 8192**3 / (mm_ms * 1e-3) / 1e12,
            "how": "measured on this device at job time: 1 GiB device copy (bytes read and "
                   "written), 8192^3 bf16 matmul on random data"}
