"""What kernel attribution needs from the profiles the timings already take (job process side):
each side's busy time per call split into units, in program order.

A unit is the work one top-level ATen op did (an op no other ATen op called: `aten::linear`
holds its `aten::t` and `aten::addmm`), or one compiled kernel (a C++ kernel on a CPU, a Triton
kernel on a GPU, which no ATen op launches), or on a GPU one replay of a CUDA graph (all the
kernels its `cudaGraphLaunch` ran, each `inside` it by name: mode="reduce-overhead"). CPU: a
unit's time is its own self CPU time and its busy descendants' (so the units add up to the
profile's busy total, `profile.totals`). GPU: the device time of the kernels, memcpys and
memsets it launched, each tied to the op that launched it through the profiler's `External id`
(a graph's kernels: to its launch, through `correlation`). The same op's n-th call in every
profiled call is one unit (`occurrence`), its time per call; an op called a number of times that
the calls don't divide is one unit for all its calls (`occurrence` None).

Units say where they ran: CPU, a C++ kernel keeps the name its graph's range has (`profiled_as`:
`graph_0_cpp_fused_add_0`); GPU, a Triton launch or graph replay names the compile id of the
Dynamo region that ran it (`graph`; a compiled backward's, through the sequence number of its
`CompiledFunction`). A unit autograd ran in the backward names its autograd node (`backward`:
`MulBackward0`, `torch::autograd::AccumulateGrad`), and the
forward unit whose op made its autograd node (`forward`: the profiler's sequence number of the
`autograd::engine::evaluate_function` range it ran in is the one that forward op recorded).

The join with Inductor's provenance (compiled kernel -> post-grad nodes -> the Dynamo nodes, the
user's ATen calls, they came from) is made where the result is built
(`compiler_core/features/timings/attribution.py`).
"""

from __future__ import annotations

import functools
import gc
from collections import Counter


def collector_paused(make_units):
    """`make_units` with Python's cyclic garbage collector paused. Units are made from a
    profile's events with a dict or more per op, none in a reference cycle, all freed but the
    units when it returns: a collection started meanwhile finds no garbage, and promotes those
    dicts to where they tip a full collection of the job process's heap (a compiled
    ResNet-18's: 0.64-0.73 M objects). On an H100, with the collector running, making that
    eager profile's units took 35 ms (a collection 16 ms of it) against 18 ms paused."""
    @functools.wraps(make_units)
    def paused(*args, **kwargs):
        enabled = gc.isenabled()
        gc.disable()
        try:
            return make_units(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()
    return paused


def _identity(name: str, info: dict) -> tuple:
    """What tells units apart: their graph, forward or backward, and their name (a C++ kernel's
    range name: `graph_1_cpp_fused_add_0`)."""
    return info.get("graph"), bool(info.get("backward")), info.get("profiled_as", name)


def per_call(units: list[tuple], calls: int) -> list[dict]:
    """(name, us) or (name, us, {recorded: the sequence numbers it recorded, backward_of: its
    backward's sequence number, profiled_as: its range's own name, graph: the compile id of the
    graph that ran it, backward: the autograd node whose backward it ran in, inside: us per
    kernel it ran})
    in time order over `calls` calls -> per-call units in first-call order, a backward unit
    with the forward unit whose sequence number its backward carries (`forward`)."""
    counts = Counter(_identity(unit[0], unit[2] if len(unit) > 2 else {}) for unit in units)
    seen: Counter = Counter()
    out: dict[tuple, dict] = {}
    made_by: dict[int, dict] = {}  # sequence number -> the forward unit that recorded it last
    for name, us, *extra in units:
        info = extra[0] if extra else {}
        identity = _identity(name, info)
        per = counts[identity] / calls
        occurrence = seen[identity] % int(per) if per.is_integer() else None
        seen[identity] += 1
        unit = out.setdefault((identity, occurrence), {"name": name, "occurrence": occurrence,
                                                        "us": 0.0})
        unit["us"] += us / calls
        if info.get("profiled_as", name) != name:
            unit.setdefault("profiled_as", info["profiled_as"])
        unit.update((k, info[k]) for k in ("graph", "backward") if info.get(k))
        for kernel, kernel_us in info.get("inside", {}).items():
            inside = unit.setdefault("inside", {})
            inside[kernel] = inside.get(kernel, 0.0) + kernel_us / calls
        recorded, backward_of = info.get("recorded", ()), info.get("backward_of")
        if backward_of is None:
            made_by.update((number, unit) for number in recorded)
        elif backward_of in made_by and "forward" not in unit:
            forward = made_by[backward_of]
            unit["forward"] = {"name": forward["name"], "occurrence": forward["occurrence"]}
    return list(out.values())


BACKWARD_RANGE = "autograd::engine::evaluate_function: "
# Dynamo's profiler range around each compiled graph it runs, named by the graph's compile id.
REGION = "Torch-Compiled Region: "


def _node(backward_range: str) -> str:
    """The autograd node a backward range ran: `MulBackward0`, `torch::autograd::AccumulateGrad`."""
    return backward_range.removeprefix(BACKWARD_RANGE)


def _backward_ranges(event) -> list:
    """The autograd backward ranges an event ran in, innermost first."""
    ranges = []
    while event is not None:
        if event.name.startswith(BACKWARD_RANGE):
            ranges.append(event)
        event = event.cpu_parent
    return ranges


def _backward_of(ranges: list) -> int | None:
    """The sequence number of the autograd node whose backward the innermost of `ranges` that
    has one ran (AccumulateGrad's has none)."""
    return next((r.sequence_nr for r in ranges if r.sequence_nr >= 0), None)


def _recorded(event) -> list[int]:
    """The sequence numbers an event and its descendants recorded (the autograd nodes they
    made: `aten::linear`'s `aten::addmm` makes AddmmBackward0)."""
    own = [event.sequence_nr] if event.sequence_nr >= 0 else []
    return own + [n for child in event.cpu_children for n in _recorded(child)]


@collector_paused
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
    graph_of = _graphs_by_sequence_number(events)
    out = []
    for _, name, us, event in units:
        if us <= 0:
            continue
        ranges = _backward_ranges(event)
        backward_of = _backward_of(ranges)
        out.append((name, us, {"recorded": _recorded(event), "profiled_as": event.name,
                               "backward_of": backward_of,
                               "backward": _node(ranges[0].name) if ranges else None,
                               "graph": _region(event) or graph_of.get(backward_of)}))
    return per_call(out, calls)


def _region(event) -> str | None:
    """The compile id of the Dynamo region a CPU event ran in, if any."""
    while event is not None:
        if event.name.startswith(REGION):
            return event.name[len(REGION):]
        event = event.cpu_parent
    return None


def _graphs_by_sequence_number(events) -> dict[int, str]:
    """Sequence number -> the Dynamo region whose op recorded it (a compiled graph's
    `CompiledFunction`: its backward's ops carry that number, outside any region)."""
    return {event.sequence_nr: region for event in events if event.sequence_nr >= 0
            for region in [_region(event)] if region}


GRAPH_LAUNCHES = ("cudaGraphLaunch", "cudaGraphLaunch_v10000")  # the runtime's graph replays


def _walk(ops: list[dict]) -> tuple[dict, dict]:
    """External id of each CPU op -> where it ran: `top` the top-level ATen op (itself where it
    is one, None outside any), `graph` the compile id of the Dynamo region it ran in (a backward:
    the region whose op recorded the sequence number of the autograd node it ran in, the compiled
    graph's `CompiledFunction`), `backward` the autograd node whose backward it ran in,
    `backward_of` that node's sequence number; a top-level op's also has `recorded`, the sequence
    numbers it and its descendants recorded. And External id -> the op's start. An op that
    opens nothing of its own (most: an ATen op's descendants) shares its parent's `where`."""
    outside = {"top": None, "graph": None, "backward": None, "backward_of": None}
    out: dict = {}
    started: dict = {}
    by_thread: dict = {}
    for op in ops:
        by_thread.setdefault(op.get("tid"), []).append(op)
    for thread_ops in by_thread.values():
        thread_ops.sort(key=lambda op: (op["ts"], -op.get("dur", 0)))
        ends: list[float] = []  # the ops still open: when each ends, and where it ran
        open_wheres: list[dict] = []
        for op in thread_ops:
            ts, name, args = op["ts"], op["name"], op["args"]
            while ends and ends[-1] <= ts:
                ends.pop()
                open_wheres.pop()
            where = open_wheres[-1] if open_wheres else outside
            if where["top"] is None and name.startswith("aten::"):
                where = {**where, "top": op, "recorded": []}
            elif name.startswith(REGION):
                where = {**where, "graph": name[len(REGION):]}
            elif name.startswith(BACKWARD_RANGE):
                where = {**where, "backward": _node(name),
                         "backward_of": args.get("Sequence number", where["backward_of"])}
            if where["top"] is not None and "Sequence number" in args:
                where["recorded"].append(args["Sequence number"])
            out[args["External id"]] = where
            started[args["External id"]] = ts
            ends.append(ts + op.get("dur", 0))
            open_wheres.append(where)
    graph_of = {op["args"]["Sequence number"]: out[op["args"]["External id"]]["graph"]
                for op in ops if "Sequence number" in op["args"]
                and out[op["args"]["External id"]]["graph"]}
    for where in {id(where): where for where in out.values()}.values():
        if where["graph"] is None and where["backward_of"] is not None:
            where["graph"] = graph_of.get(where["backward_of"])
    return out, started


def _unit_of(e: dict, walked: dict, started: dict, graph_launch: dict | None) -> tuple:
    """(key, time-order stamp, name, what the unit says of itself) of the unit a device event
    belongs to: the CUDA graph replay that ran it, else a Triton kernel or work launched
    outside ATen ops (one unit per launch, stamped when its op launched it), else its
    top-level ATen op's call."""
    op_id = e.get("args", {}).get("External id")
    where = walked.get(op_id, {})
    op, graph = where.get("top"), where.get("graph")
    info = {"graph": graph} if graph else {}
    if where.get("backward"):
        info["backward"] = where["backward"]
    if graph_launch is not None:
        return (("graph", graph_launch["args"]["correlation"]), graph_launch["ts"],
                graph_launch["name"], {**info, "inside": {}})
    if e["name"].startswith("triton_") or op is None:
        return ("launch", e["ts"], e["name"]), started.get(op_id, e["ts"]), e["name"], info
    top = walked[op["args"]["External id"]]
    return (("op", op["args"]["External id"]), op["ts"], op["name"],
            {"recorded": top["recorded"], "backward_of": top["backward_of"],
             "backward": top["backward"], "graph": top["graph"]})


DEVICE_WORK = ("kernel", "gpu_memcpy", "gpu_memset")


@collector_paused
def cuda_units(trace_events: list[dict], calls: int, skip: str) -> list[dict]:
    """Device time of every kernel, memcpy and memset (but `skip`, the L2 flush): one unit per
    call of a top-level ATen op (all it launched), per replay of a CUDA graph (all its kernels,
    each named `inside` it), and per launch of a Triton kernel or of work outside ATen ops;
    each with the compile id of the graph that ran it (`graph`) where the profile says."""
    ops, device_work, graph_launches = [], [], {}
    for e in trace_events:
        category = e.get("cat")
        if category == "cpu_op" and "External id" in e.get("args", {}):
            ops.append(e)
        elif category in DEVICE_WORK and e["name"] != skip:
            device_work.append(e)
        elif category == "cuda_runtime" and e.get("name") in GRAPH_LAUNCHES:
            graph_launches[e["args"]["correlation"]] = e
    walked, started = _walk(ops)
    units: dict = {}
    for e in device_work:
        key, ts, name, info = _unit_of(e, walked, started, graph_launches.get(
            e.get("args", {}).get("correlation")))
        unit = units.setdefault(key, [ts, name, 0.0, info])
        unit[2] += float(e.get("dur", 0))
        inside = unit[3].get("inside")
        if inside is not None:
            inside[e["name"]] = inside.get(e["name"], 0.0) + float(e.get("dur", 0))
    ordered = sorted(units.values(), key=lambda unit: unit[0])
    return per_call([(name, us, info) for _, name, us, info in ordered], calls)
