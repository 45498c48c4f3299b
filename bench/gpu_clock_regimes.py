"""Where does the bf16 matmul+GELU's end-to-end gap to do_bench go? (issue 40, item 10)

    python bench/gpu_clock_regimes.py [--out bench/results/gpu_clock_regimes.json]

Imports no torchbolt code. Compiles the GPU gallery's `matmul_epilogue` (8192x4096 @ 4096x4096,
bf16, + bias, GELU) and times eager and compiled under four regimes, in rounds that alternate:
- `back_to_back`: torchbolt's warm series (each call between its own CUDA events, calls queued
  one after another, L2 as the previous call left it);
- `do_bench`: `triton.testing.do_bench` (median; it zeroes a 256 MB buffer before each call);
- `flushed`: torchbolt's per-call events with the same L2 flush before each call (its `cold`);
- `idle_gap`: per-call events with the GPU idle ~0.3 ms between calls (`torch.cuda._sleep`).
In each regime, the profiler's device time of the cuBLAS matmul and of the Triton epilogue, and
nvidia-smi's SM clock, power draw and active clock-event reasons sampled every 20 ms, so a gap
between regimes can be put on a kernel and on the clock it ran at.

Found on an H100 80GB HBM3 (700 W limit, 1980 MHz max; torch 2.11; results/gpu_clock_regimes.json):
the gap is the power cap, not the clock or the method. Back to back, the bf16 GEMMs hold the card
at ~685 W with the software power cap active (clock-event reason 0x4) and the SM clock at
1455-1590 MHz; do_bench's 256 MB memset between calls drops the average power to 648-670 W and
the clock to 1620-1650 MHz; flushed per-call events agree with do_bench (0.99x), and an idle gap
lets the clock reach ~1960 MHz (0.91-0.94x). Per-call events back to back: 1.057x (eager) and
1.074x (compiled) of do_bench. The profiler's kernel times agree across regimes (mm ~350 us)
because under the profiler the host takes longer than the GPU per call (its calls are paced).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import threading
import time

import torch
import torch.nn.functional as F

from gpu_reference import per_call_ms  # bench/ is this script's folder: the same per-call method

M, K, N = 8192, 4096, 4096
CALLS = 300
ROUNDS = 6
SMI_FIELDS = ("clocks.sm", "power.draw", "temperature.gpu", "clocks_event_reasons.active")


def linear_gelu(x, weight, bias):
    return F.gelu(x @ weight + bias)


class SmiSampler:
    """nvidia-smi every 20 ms in a thread; `window(t0, t1)` gives the samples taken in it."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, list[str]]] = []
        self.proc = subprocess.Popen(
            ["nvidia-smi", f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader,nounits",
             "-lms", "20"], stdout=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.samples.append((time.monotonic(), [v.strip() for v in line.split(",")]))

    def window(self, spans: list[tuple[float, float]]) -> dict:
        rows = [v for t, v in self.samples if any(t0 <= t <= t1 for t0, t1 in spans)]
        if not rows:
            return {"samples": 0}

        def med(i):
            values = [float(r[i]) for r in rows if r[i].replace(".", "", 1).isdigit()]
            return statistics.median(values) if values else None
        reasons = sorted({r[3] for r in rows})
        return {"samples": len(rows), "sm_mhz": med(0), "power_w": med(1), "temp_c": med(2),
                "clock_event_reasons": reasons}

    def close(self) -> None:
        self.proc.terminate()


def regimes(flush, cycles_per_ms: float) -> dict:
    from triton.testing import do_bench
    gap = lambda: torch.cuda._sleep(int(0.3 * cycles_per_ms))  # noqa: E731
    return {
        "back_to_back": lambda fn: per_call_ms(fn, CALLS),
        "do_bench": lambda fn: do_bench(fn, return_mode="median"),
        "flushed": lambda fn: per_call_ms(fn, CALLS, flush),
        "idle_gap": lambda fn: per_call_ms(fn, CALLS, gap),
    }


def kernel_times(fn, between=None, calls: int = 100) -> dict:
    """Median device time (us) per kernel name over `calls` calls under the profiler (whose
    own host cost paces the calls: see the module's findings)."""
    activities = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(calls):
            if between:
                between()
            fn()
        torch.cuda.synchronize()
    by_name: dict[str, list[float]] = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            by_name.setdefault(event.name, []).append(event.device_time)
    return {name: {"median_us": statistics.median(v), "launches": len(v)}
            for name, v in by_name.items() if len(v) >= calls // 2}


def host_us_per_call(fn, calls: int = 100) -> float:
    """How long the host takes to enqueue one call (no sync inside the loop): above the call's
    GPU time, the GPU waits for the host and per-call events include the wait."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - t0) / calls * 1e6
    torch.cuda.synchronize()
    return host


def cycles_per_ms() -> float:
    """GPU cycles per ms from a timed `_sleep` (for the idle gap's length)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(10_000_000)
    end.record()
    end.synchronize()
    return 10_000_000 / start.elapsed_time(end)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="bench/results/gpu_clock_regimes.json")
    out_path = parser.parse_args().out
    torch.manual_seed(0)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    weight = torch.randn(K, N, device="cuda", dtype=torch.bfloat16) / K**0.5
    bias = torch.randn(N, device="cuda", dtype=torch.bfloat16)
    compiled = torch.compile(linear_gelu)
    sides = {"eager": lambda: linear_gelu(x, weight, bias),
             "compiled": lambda: compiled(x, weight, bias)}
    for fn in sides.values():
        for _ in range(5):
            fn()
    l2 = torch.empty(int(256e6) // 4, dtype=torch.int32, device="cuda")  # do_bench's size
    flush = l2.zero_
    table = regimes(flush, cycles_per_ms())
    smi = SmiSampler()
    time.sleep(0.5)
    figures = {r: {s: [] for s in sides} for r in table}
    windows = {r: {s: [] for s in sides} for r in table}
    for round_ in range(ROUNDS):
        order = list(table) if round_ % 2 == 0 else list(reversed(table))
        for regime in order:
            for side, fn in (sides.items() if round_ % 2 == 0 else reversed(sides.items())):
                t0 = time.monotonic()
                figures[regime][side].append(table[regime](fn))
                windows[regime][side].append((t0, time.monotonic()))
    time.sleep(0.2)
    betweens = {"back_to_back": None, "flushed": flush, "do_bench": flush,
                "idle_gap": lambda: torch.cuda._sleep(int(0.3 * cycles_per_ms()))}
    kernels = {r: {s: kernel_times(fn, betweens[r]) for s, fn in sides.items()} for r in table}
    smi.close()
    host = {side: host_us_per_call(fn) for side, fn in sides.items()}
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "host_us_per_call": host,
              "shape": [M, K, N], "calls_per_figure": CALLS, "rounds": ROUNDS, "regimes": {}}
    for regime in table:
        result["regimes"][regime] = {
            side: {"median_ms": statistics.median(figures[regime][side]),
                   "rounds_ms": figures[regime][side],
                   "smi": smi.window(windows[regime][side]),
                   "kernels": kernels[regime][side]}
            for side in sides}
    base = result["regimes"]["do_bench"]
    result["ratio_to_do_bench"] = {
        regime: {side: result["regimes"][regime][side]["median_ms"] / base[side]["median_ms"]
                 for side in sides} for regime in table}
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=1)
    print(json.dumps(result["ratio_to_do_bench"], indent=1), "host us/call", host)
    for regime in table:
        for side in sides:
            r = result["regimes"][regime][side]
            print(regime, side, round(r["median_ms"], 4), r["smi"],
                  {n[:40]: round(v["median_us"], 1) for n, v in r["kernels"].items()})


if __name__ == "__main__":
    main()
