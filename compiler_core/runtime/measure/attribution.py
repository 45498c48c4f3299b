"""What kernel attribution needs from the profiles the timings already take (job process side):
each side's busy time per call split into units, in program order.

A unit is the work one top-level ATen op did (an op no other ATen op called: `aten::linear`
holds its `aten::t` and `aten::addmm`), or one compiled kernel (a C++ kernel on a CPU, a Triton
kernel on a GPU, which no ATen op launches). CPU: a unit's time is its own self CPU time and its
busy descendants' (so the units add up to the profile's busy total, `profile.totals`). GPU: the
device time of the kernels, memcpys and memsets it launched, each tied to the op that launched it
through the profiler's `External id`. The same op's n-th call in every profiled call is one unit
(`occurrence`), its time per call; an op called a number of times that the calls don't divide is
one unit for all its calls (`occurrence` None). CPU: a C++ kernel's unit keeps the name its graph's range has
(`profiled_as`: `graph_0_cpp_fused_add_0`); an op autograd ran in the backward names
the forward unit whose op made its autograd node (`forward`: the profiler's sequence number of
the `autograd::engine::evaluate_function` range it ran in is the one that forward op recorded).

The join with Inductor's provenance (compiled kernel -> post-grad nodes -> the Dynamo nodes, the
user's ATen calls, they came from) is made where the result is built
(`compiler_core/features/timings/attribution.py`).
"""

from __future__ import annotations

from collections import Counter


def per_call(units: list[tuple], calls: int) -> list[dict]:
    """(name, us) or (name, us, {recorded: the sequence numbers it recorded, backward_of: its
    backward's sequence number, profiled_as: its range's own name}) in time order over `calls`
    calls -> per-call units in first-call order, a backward unit with the forward unit whose
    sequence number its backward carries (`forward`)."""
    counts = Counter(unit[0] for unit in units)
    seen: Counter = Counter()
    out: dict[tuple, dict] = {}
    made_by: dict[int, dict] = {}  # sequence number -> the forward unit that recorded it last
    for name, us, *extra in units:
        per = counts[name] / calls
        occurrence = seen[name] % int(per) if per.is_integer() else None
        seen[name] += 1
        unit = out.setdefault((name, occurrence), {"name": name, "occurrence": occurrence,
                                                    "us": 0.0})
        unit["us"] += us / calls
        info = extra[0] if extra else {}
        if info.get("profiled_as", name) != name:
            unit.setdefault("profiled_as", info["profiled_as"])
        recorded, backward_of = info.get("recorded", ()), info.get("backward_of")
        if backward_of is None:
            made_by.update((number, unit) for number in recorded)
        elif backward_of in made_by and "forward" not in unit:
            forward = made_by[backward_of]
            unit["forward"] = {"name": forward["name"], "occurrence": forward["occurrence"]}
    return list(out.values())


BACKWARD_RANGE = "autograd::engine::evaluate_function: "


def _backward_of(event) -> int | None:
    """The sequence number of the autograd node whose backward an event ran in, if any."""
    while event is not None:
        if event.name.startswith(BACKWARD_RANGE) and event.sequence_nr >= 0:
            return event.sequence_nr
        event = event.cpu_parent
    return None


def _recorded(event) -> list[int]:
    """The sequence numbers an event and its descendants recorded (the autograd nodes they
    made: `aten::linear`'s `aten::addmm` makes AddmmBackward0)."""
    own = [event.sequence_nr] if event.sequence_nr >= 0 else []
    return own + [n for child in event.cpu_children for n in _recorded(child)]


def cpu_units(events, calls: int, name_of, busy) -> list[dict]:
    """Top-level busy events of a CPU profile (FunctionEvents) with their busy descendants'
    self time. `name_of(event)`: the row name; `busy(name)`: whether it counts as work."""
    def inclusive(event) -> float:
        own = event.self_cpu_time_total if busy(name_of(event)) else 0.0
        return own + sum(inclusive(child) for child in event.cpu_children)

    def top_level(event) -> bool:
        parent = event.cpu_parent
        while parent is not None:
            if busy(name_of(parent)):
                return False
            parent = parent.cpu_parent
        return True
    units = [(event.time_range.start, name_of(event), inclusive(event), event) for event in events
             if busy(name_of(event)) and top_level(event)]
    units.sort(key=lambda unit: unit[0])
    return per_call([(name, us, {"recorded": _recorded(event), "backward_of": _backward_of(event),
                                 "profiled_as": event.name})
                     for _, name, us, event in units if us > 0], calls)


def _top_level_ops(ops: list[dict]) -> dict:
    """External id of each CPU op -> the top-level ATen op it ran in (itself where it is one),
    None outside any ATen op."""
    out: dict = {}
    by_thread: dict = {}
    for op in ops:
        by_thread.setdefault(op.get("tid"), []).append(op)
    for thread_ops in by_thread.values():
        thread_ops.sort(key=lambda op: (op["ts"], -op.get("dur", 0)))
        open_ops: list[dict] = []
        for op in thread_ops:
            while open_ops and open_ops[-1]["ts"] + open_ops[-1].get("dur", 0) <= op["ts"]:
                open_ops.pop()
            open_ops.append(op)
            out[op["args"]["External id"]] = next(
                (o for o in open_ops if o["name"].startswith("aten::")), None)
    return out


def cuda_units(trace_events: list[dict], calls: int, skip: str) -> list[dict]:
    """Device time of every kernel, memcpy and memset (but `skip`, the L2 flush): one unit per
    call of a top-level ATen op (all it launched), a Triton kernel and work launched outside
    ATen ops one unit per launch under its own name."""
    ops = [e for e in trace_events
           if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})]
    launched_in = _top_level_ops(ops)
    units: dict = {}
    for e in trace_events:
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset") or e["name"] == skip:
            continue
        op = launched_in.get(e.get("args", {}).get("External id"))
        if e["name"].startswith("triton_") or op is None:
            key, ts, name = ("launch", e["ts"], e["name"]), e["ts"], e["name"]
        else:
            key, ts, name = ("op", op["args"]["External id"]), op["ts"], op["name"]
        unit = units.setdefault(key, [ts, name, 0.0])
        unit[2] += float(e.get("dur", 0))
    ordered = sorted(units.values(), key=lambda unit: unit[0])
    return per_call([(name, us) for _, name, us in ordered], calls)
