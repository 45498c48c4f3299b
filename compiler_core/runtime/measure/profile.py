"""Per-kernel rows from the PyTorch profiler: one row per kernel name, per call.

CPU: self CPU time of each op, C++ kernel (Inductor's kernel profiling on, see
`runtime.config`) and framework range, so that the rows add up to the time the profiler
recorded and nothing counts twice (`aten::linear` holds `aten::addmm`; self times leave the
children out). GPU: device time of each kernel, memcpy and memset with grid, block and
registers, each call after an L2 flush; a matmul's FLOP from its op's input shapes.

Kernels of one call never take longer than the call: `totals` checks a profile against its own
calls' time and against the end-to-end time, and where it fails, its times are withheld with
the figures that failed (`withheld_reason`).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import tempfile
import time

import torch

from .attribution import REGION, cpu_units, cuda_units
from .contention import Watch

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


def _rows(groups: dict[str, list[dict]], calls: int) -> list[dict]:
    """One row per kernel name, kernels and ops longest first, then the framework ranges (the
    Python inside Dynamo's and AOTAutograd's ranges, which is no kernel's): its launches' times
    summed over the calls (so that the rows add up to the profile's total), and its median
    launch."""
    rows = []
    for name, events in groups.items():
        durations = [e["us"] for e in events]
        first = events[0]
        row = {"name": name, "kind": first["kind"], "launches": len(events) / calls,
               "us_per_call": sum(durations) / calls,
               "us_per_launch": statistics.median(durations),
               **{k: v for k, v in first.items() if k not in ("us", "kind", "flop")}}
        flop = sum(e.get("flop", 0) for e in events) / calls
        if flop:
            row["flop_per_call"] = flop
        rows.append(row)
    rows.sort(key=lambda r: (r["kind"] == "framework", -r["us_per_call"]))
    return rows


def top(rows: list[dict]) -> list[dict]:
    """The first `TOP_ROWS` rows, and a row summing the rest's kernels and ops and one their
    framework ranges (so that the busy rows still add up to the busy time)."""
    if len(rows) <= TOP_ROWS:
        return rows
    rest = rows[TOP_ROWS:]
    summed = []
    for kind, label in (("other", "others"), ("framework", "other framework ranges")):
        part = [r for r in rest if (r["kind"] == "framework") == (kind == "framework")]
        if part:
            summed.append({"name": f"{len(part)} {label}", "kind": kind,
                           "launches": sum(r["launches"] for r in part),
                           "us_per_call": sum(r["us_per_call"] for r in part),
                           "us_per_launch": None})
    return rows[:TOP_ROWS] + summed


def compiled_regions(names) -> list[str]:
    """The compile ids of the graphs the profiled calls ran, in the order they first ran."""
    return list(dict.fromkeys(n.removeprefix(REGION) for n in names if n.startswith(REGION)))


# Rounds of profiled calls on a CPU: a thread's wait for a CPU inside an op lands in that op's
# time (on a loaded 2-core machine a compiled `aten::addmm` read 7.5 ms in a 1.4 ms call), so
# the round with the least time per call is kept.
PROFILE_ROUNDS = 3


def _profiled_round(fn, calls: int) -> tuple:
    """(the profile, its calls' host time per call in us, the round's contention)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        with Watch() as watch:
            started = time.perf_counter()
            for _ in range(calls):
                fn()
            wall_us = (time.perf_counter() - started) * 1e6 / calls
    return prof, wall_us, watch.figures


def profile_cpu(fn, calls: int, rounds: int = PROFILE_ROUNDS) -> dict:
    """Self CPU time of every op, C++ kernel and framework range the calls run, in the least
    disturbed of `rounds` rounds of `calls` calls, with that round's own time per call (host
    clock, profiler on), its contention and the compiled graphs it ran."""
    prof, wall_us, contention = min((_profiled_round(fn, calls) for _ in range(rounds)),
                                    key=lambda profiled: profiled[1])
    events = prof.events()
    groups: dict[str, list[dict]] = {}
    for event in events:
        if event.self_cpu_time_total > 0 and not event.name.startswith("ProfilerStep"):
            name = _kernel_name(event.name)
            groups.setdefault(name, []).append({"us": event.self_cpu_time_total,
                                                "kind": _kind(name, "cpu_op")})
    started = time.perf_counter()
    units = cpu_units(events, calls, lambda event: _kernel_name(event.name), _is_busy)
    units_s = time.perf_counter() - started
    return {"rows": _rows(groups, calls), "wall_us_per_call": wall_us,
            "events_per_call": sum(map(len, groups.values())) / calls,
            "contention": contention, "regions": compiled_regions(e.name for e in events),
            "units": units, "units_s": units_s}


def _is_busy(name: str) -> bool:
    """Whether a CPU profile's row counts as work (`totals`' busy time): not a framework range."""
    return _kind(name, "cpu_op") != "framework" and not name.startswith("ProfilerStep")


# What a profile must show to be a breakdown of the call (`withheld_reason`): its rows add up
# to no more than its calls took, within ADD_UP_TOLERANCE (the profiler's clock against the
# host's); on a CPU its calls took no longer than SLOWER times the call timed without the
# profiler, plus PER_EVENT_US for each op and range recorded (the profiler's own cost: 0.3 us
# an event on this 2-core machine, quiet; a 35 us call of 72 ops read 56 us profiled).
ADD_UP_TOLERANCE = 0.10
SLOWER, PER_EVENT_US = 1.5, 2.0


def _duration(us: float) -> str:
    return f"{us / 1e3:.3g} ms" if us >= 1e3 else f"{us:.3g} µs"


def totals(profile: dict, e2e_ms: float | None) -> dict:
    """Busy time per call (kernels and ops, without framework ranges) and launches; on a CPU
    also what the profiler recorded in all and the profiled calls' own time. Busy share: of the
    profiled call (CPU) or of the end-to-end call (GPU). `withheld`: why its times can't be
    trusted, in place of the share."""
    rows = profile["rows"]
    busy_rows = [r for r in rows if r["kind"] != "framework"]  # CPU: Dynamo's, AOT's ranges
    out = {"us_per_call": sum(r["us_per_call"] for r in busy_rows),
           "launches_per_call": sum(r["launches"] for r in busy_rows)}
    if "wall_us_per_call" in profile:  # CPU
        out.update(recorded_us_per_call=sum(r["us_per_call"] for r in rows),
                   **{k: profile[k] for k in ("wall_us_per_call", "events_per_call",
                                               "contention")})
    reason = withheld_reason(out, e2e_ms)
    if reason:
        out["withheld"] = reason
    elif "wall_us_per_call" in out:
        out["busy_share"] = out["us_per_call"] / out["wall_us_per_call"]
    elif e2e_ms:
        out["busy_share"] = out["us_per_call"] / (e2e_ms * 1e3)
    return out


def withheld_reason(totals: dict, e2e_ms: float | None) -> str | None:
    """Why a side's per-kernel times are not a breakdown of its call, with the figures."""
    busy = totals["us_per_call"]
    if "wall_us_per_call" not in totals:  # GPU: device time against the end-to-end call
        if e2e_ms and busy > e2e_ms * 1e3 * (1 + ADD_UP_TOLERANCE):
            return (f"the profiled kernels took {_duration(busy)} per call, longer than the "
                    f"whole call ({_duration(e2e_ms * 1e3)})")
        return None
    wall, recorded = totals["wall_us_per_call"], totals["recorded_us_per_call"]
    if totals["contention"].get("busy"):
        return f"profiled while {totals['contention']['busy']}"
    if recorded > wall * (1 + ADD_UP_TOLERANCE):
        return (f"the profiler's rows add up to {_duration(recorded)} per call, more than the "
                f"profiled calls took ({_duration(wall)})")
    allowed = SLOWER * e2e_ms * 1e3 + PER_EVENT_US * totals["events_per_call"] if e2e_ms else None
    if allowed and wall > allowed:
        return (f"the profiled calls took {_duration(wall)} each against {_duration(e2e_ms * 1e3)} "
                "timed without the profiler: they ran under other conditions (other work on "
                "the machine), so their kernel times are not a breakdown of the call")
    return None


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


def profile_cuda(fn, calls: int, flush) -> dict:
    """Device time of every kernel, memcpy and memset the call runs, each after an L2 flush,
    and the compiled graphs the calls ran."""
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
    started = time.perf_counter()
    units = cuda_units(events, calls, NAME)
    return {"rows": _rows(groups, calls),
            "regions": compiled_regions(e.get("name", "") for e in events),
            "units": units, "units_s": time.perf_counter() - started}
