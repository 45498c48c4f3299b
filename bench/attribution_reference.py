"""Reference for `bench/attribution_gpu.py`, measured without any torchbolt code.

    python bench/attribution_reference.py SCRIPT [--warm-s S]  -> last stdout line: JSON

Execs SCRIPT with `torch.compile` patched to keep each compiled callable and its first call
(`gpu_reference.record_compiles`), then, per callable, eager and compiled on that call's
arguments in its grad mode (a backward where outputs require grad), a plain profiler loop of
`CALLS` calls, L2 flushed before each (as torchbolt's per-kernel profile does), read through
the profiler's own averages (`key_averages`, not the Chrome trace torchbolt parses):
- `kernels`: each device kernel's self device time per call, by kernel name;
- `ops`: each ATen op's device time per call (its kernels and its children's), by op name;
- `clock`: the GPU's SM clock, power draw and whether its power cap was holding the clock,
  read through NVML just before and just after the loop.
The flush runs inside a `record_function` range whose ops are left out. `--warm-s S`: before
each loop, the callable back to back for S seconds (as torchbolt's timing series run it before
its profile), so that the loop runs in the GPU state such a series leaves.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time

import torch

from gpu_reference import GRAD_MODES, l2_flush, record_compiles, sides_of  # bench/

CALLS = 20
FLUSH = "reference_flush"
POWER_CAP = 0x4  # NVML's clock-event reason: the software power cap


def clock() -> dict | None:
    """The GPU's SM clock (MHz), power draw (W) and whether the power cap holds the clock now."""
    try:
        import pynvml
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
        return {"sm_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
                "power_w": pynvml.nvmlDeviceGetPowerUsage(handle) / 1000,
                "power_capped": bool(int(reasons(handle)) & POWER_CAP)}
    except Exception:  # noqa: BLE001 (no NVML: no clock figures)
        return None


def read(prof, calls: int) -> dict:
    """A profile's per-call figures as key_averages gives them (see the module's docstring)."""
    flushed = {e.id for e in prof.events() if e.name == FLUSH}
    flush_ops = {e.name for e in prof.events() if e.cpu_parent is not None
                 and e.cpu_parent.id in flushed}
    kernels, ops = {}, {}
    for avg in prof.key_averages():
        us = avg.self_device_time_total / calls
        if avg.device_type == torch.autograd.DeviceType.CUDA:
            kernels[avg.key] = kernels.get(avg.key, 0.0) + us
        elif avg.key.startswith("aten::") and avg.key not in flush_ops:
            ops[avg.key] = avg.device_time_total / calls
    return {"kernels": kernels, "ops": ops, "flush_ops": sorted(flush_ops)}


def profile(call, flush, warm_s: float = 0.0) -> dict:
    """`CALLS` profiled calls, each after `flush`, read by `read`, with the clock around them."""
    ends = time.perf_counter() + warm_s
    while time.perf_counter() < ends:
        call()
    before = clock()
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(CALLS):
            with torch.profiler.record_function(FLUSH):
                flush()
            call()
        torch.cuda.synchronize()
    return {**read(prof, CALLS), "clock": {"before": before, "after": clock()},
            "warm_s": warm_s}


def measure(entry: dict, flush, warm_s: float) -> dict:
    with GRAD_MODES[entry["call"][2]]():
        return {side: profile(call, flush, warm_s) for side, call in sides_of(entry).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("script")
    parser.add_argument("--warm-s", type=float, default=0.0)
    args = parser.parse_args()
    import torch._inductor.config as inductor_config
    inductor_config.force_disable_caches = True
    entries = record_compiles()
    with open(args.script, encoding="utf-8") as fh:
        code = compile(fh.read(), args.script, "exec")
    with contextlib.redirect_stdout(sys.stderr):
        exec(code, {"__name__": "__main__", "__file__": args.script})
    for entry in entries:
        if "hook" in entry:
            entry["hook"].remove()
    flush = l2_flush()
    print(json.dumps({str(i): measure(entry, flush, args.warm_s)
                      for i, entry in enumerate(entries) if entry["call"] is not None}))


if __name__ == "__main__":
    main()
