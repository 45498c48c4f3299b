"""Reference for `bench/attribution_gpu.py`, measured without any torchbolt code.

    python bench/attribution_reference.py SCRIPT  -> last stdout line: JSON

Execs SCRIPT with `torch.compile` patched to keep each compiled callable and its first call
(`gpu_reference.record_compiles`), then, per callable, eager and compiled on that call's
arguments in its grad mode (a backward where outputs require grad), a plain profiler loop of
`CALLS` calls, L2 flushed before each (as torchbolt's per-kernel profile does), read through
the profiler's own averages (`key_averages`, not the Chrome trace torchbolt parses):
- `kernels`: each device kernel's self device time per call, by kernel name;
- `ops`: each ATen op's device time per call (its kernels and its children's), by op name.
The flush runs inside a `record_function` range whose ops are left out.
"""

from __future__ import annotations

import contextlib
import json
import sys

import torch

from gpu_reference import GRAD_MODES, l2_flush, record_compiles, sides_of  # bench/

CALLS = 20
FLUSH = "reference_flush"


def profile(call, flush) -> dict:
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(CALLS):
            with torch.profiler.record_function(FLUSH):
                flush()
            call()
        torch.cuda.synchronize()
    flushed = {e.id for e in prof.events() if e.name == FLUSH}
    flush_ops = {e.name for e in prof.events() if e.cpu_parent is not None
                 and e.cpu_parent.id in flushed}
    kernels, ops = {}, {}
    for avg in prof.key_averages():
        us = avg.self_device_time_total / CALLS
        if avg.device_type == torch.autograd.DeviceType.CUDA:
            kernels[avg.key] = kernels.get(avg.key, 0.0) + us
        elif avg.key.startswith("aten::") and avg.key not in flush_ops:
            ops[avg.key] = avg.device_time_total / CALLS
    return {"kernels": kernels, "ops": ops, "flush_ops": sorted(flush_ops)}


def measure(entry: dict, flush) -> dict:
    with GRAD_MODES[entry["call"][2]]():
        return {side: profile(call, flush) for side, call in sides_of(entry).items()}


def main() -> None:
    import torch._inductor.config as inductor_config
    inductor_config.force_disable_caches = True
    entries = record_compiles()
    script = sys.argv[1]
    with open(script, encoding="utf-8") as fh:
        code = compile(fh.read(), script, "exec")
    with contextlib.redirect_stdout(sys.stderr):
        exec(code, {"__name__": "__main__", "__file__": script})
    for entry in entries:
        if "hook" in entry:
            entry["hook"].remove()
    flush = l2_flush()
    print(json.dumps({str(i): measure(entry, flush) for i, entry in enumerate(entries)
                      if entry["call"] is not None}))


if __name__ == "__main__":
    main()
