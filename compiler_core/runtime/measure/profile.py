"""Per-kernel rows from the PyTorch profiler: one row per kernel name, per call.

CPU: self CPU time of each op and C++ kernel (Inductor's kernel profiling on, see
`runtime.config`). GPU: device time of each kernel, memcpy and memset with grid, block and
registers, each call after an L2 flush; a matmul's FLOP from its op's input shapes.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import tempfile

import torch

TOP_ROWS = 25
MATMUL_OPS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}


def _kernel_name(name: str) -> str:
    """Inductor's C++ kernels are profiled as `graph_N_cpp_fused_...`."""
    head, sep, rest = name.partition("_cpp_fused")
    return "cpp_fused" + rest if sep and head.startswith("graph_") else name


def _kind(name: str, category: str) -> str:
    if name.startswith("triton_"):
        return "triton"
    if name.startswith("cpp_fused"):
        return "cpp"
    if category in ("gpu_memcpy", "gpu_memset"):
        return category.removeprefix("gpu_")
    if category == "kernel":
        return "library"
    return "aten" if name.startswith("aten::") else "framework"


def _rows(groups: dict[str, list[dict]], calls: int, robust: bool) -> list[dict]:
    """One row per kernel name. `robust`: time per call from the median launch (CPU, where
    other processes add outliers) rather than the sum of all launches (GPU device times)."""
    rows = []
    for name, events in groups.items():
        durations = [e["us"] for e in events]
        first, median = events[0], statistics.median(durations)
        launches = len(events) / calls
        row = {"name": name, "kind": first["kind"], "launches": launches,
               "us_per_call": median * launches if robust else sum(durations) / calls,
               "us_per_launch": median,
               **{k: v for k, v in first.items() if k not in ("us", "kind", "flop")}}
        flop = sum(e.get("flop", 0) for e in events) / calls
        if flop:
            row["flop_per_call"] = flop
        rows.append(row)
    rows.sort(key=lambda r: -r["us_per_call"])
    if len(rows) > TOP_ROWS:
        rest = rows[TOP_ROWS:]
        rows = rows[:TOP_ROWS] + [{"name": f"{len(rest)} others", "kind": "other",
                                   "launches": sum(r["launches"] for r in rest),
                                   "us_per_call": sum(r["us_per_call"] for r in rest),
                                   "us_per_launch": None}]
    return rows


def profile_cpu(fn, calls: int) -> list[dict]:
    """Self CPU time of every op and C++ kernel the call runs."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(calls):
            fn()
    groups: dict[str, list[dict]] = {}
    for event in prof.events():
        if event.self_cpu_time_total > 0 and not event.name.startswith("ProfilerStep"):
            name = _kernel_name(event.name)
            groups.setdefault(name, []).append({"us": event.self_cpu_time_total,
                                                "kind": _kind(name, "cpu_op")})
    return _rows(groups, calls, robust=True)


def _matmul_flop(op: dict | None) -> float:
    """2*M*N*K (times batch) from a matmul op's recorded input shapes."""
    if not op or op.get("name") not in MATMUL_OPS:
        return 0.0
    dims = [d for d in op.get("args", {}).get("Input Dims", []) if d]
    a, b = dims[-2], dims[-1]
    return 2.0 * math.prod(a) * b[-1]


def _trace_events(prof) -> list[dict]:
    """The profile as Chrome-trace events (where the CUDA kernels' launch arguments are)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)["traceEvents"]


def profile_cuda(fn, calls: int, flush) -> list[dict]:
    """Device time of every kernel, memcpy and memset the call runs, each after an L2 flush."""
    from ..gpu.l2_flush import NAME
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities, record_shapes=True) as prof:
        for _ in range(calls):
            flush()
            fn()
        torch.cuda.synchronize()
    events = _trace_events(prof)
    ops = {e["args"]["External id"]: e for e in events
           if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
    groups: dict[str, list[dict]] = {}
    counted: set = set()
    for e in events:
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset") or e["name"] == NAME:
            continue
        args, op_id = e.get("args", {}), e.get("args", {}).get("External id")
        entry = {"us": float(e.get("dur", 0)), "kind": _kind(e["name"], e["cat"]),
                 "grid": args.get("grid"), "block": args.get("block"),
                 "registers": args.get("registers per thread"),
                 "shared_bytes": args.get("shared memory")}
        if e["cat"] == "kernel" and op_id not in counted:  # a matmul's FLOP: first kernel
            counted.add(op_id)
            entry["flop"] = _matmul_flop(ops.get(op_id))
        groups.setdefault(e["name"], []).append(entry)
    return _rows(groups, calls, robust=False)
