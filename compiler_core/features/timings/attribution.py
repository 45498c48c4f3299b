"""Kernel attribution: what each compiled kernel replaced of the eager program, and what it saved
(a timing entry's `attribution`, built from its profiles' units, `runtime/measure/attribution.py`,
and the compiles' provenance).

The join: a compiled kernel holds post-grad nodes (Inductor's provenance), which came from Dynamo
graph nodes (`postToPre`): the user's torch calls, each of which eager ran as one top-level ATen
op (`torch._C._nn.gelu(y)` as `aten::gelu`, `a * b` as `aten::mul`, `x.float()` as `aten::to`:
`nodes.py`). The n-th eager call of an op is the n-th Dynamo node of that op, in graph order
over the graphs the compiled call ran (`matched` "order"); where the counts differ, an op's eager
time is split evenly over its nodes (`matched` "name"); a node no kernel holds goes to the
kernels written for its user line (`matched` "line": a pattern Inductor replaced can lose its
provenance). An eager backward op goes to the backward kernels written for the user line of the
Dynamo node its forward op was matched to (`matched` "backward line": the profiler's sequence
numbers tie it to that forward op; `gelu_backward`, which Inductor decomposes, has no node of
its name), else to the backward kernels holding post-grad nodes of its op (`matched` "backward
name"). A node whose work several kernels share (split or recomputed) has its eager time split
over them by their compiled time. A kernel's row is its own per graph where the profile tells
graphs apart (C++ kernels by their range's name, GPU launches by their Dynamo region), and a
CUDA graph replay is one row holding its graph's kernels. Eager work no kernel holds (views,
no-ops Inductor removed, ops outside the graphs) and compiled work that holds no eager op are
rows of their own, and so is the time outside kernels on each side, so that the rows add up to
each side's call.
"""

from __future__ import annotations

import re

from .nodes import dynamo_nodes, op_key
from .summary import BYTES, GENERATED, add_bytes, headline, slower_reason, waterfall

NUMBERED = re.compile(r"_\d+$")  # a post-grad node's number: `mm_1` is an `mm`
# The autograd node that adds a leaf's gradient into its .grad, outside any compiled graph: its
# ops on both sides are paired by name (`leftover_rows`)
ACCUMULATE = "torch::autograd::AccumulateGrad"
ERROR = ("Each side's kernel rows add up to its profile's busy time per call (the same profile "
         "as the per-kernel rows, to rounding); the rows outside kernels are the end-to-end "
         "median timed without the profiler minus that time, so they carry the profiler's own "
         "effect on the kernels (a profile is withheld past 10 %).")


# The range a C++ kernel opens for the profiler (Inductor's cpp.enable_kernel_profile), named by
# its graph: `graph_0_cpp_fused_add_0`, so that kernels of one name in two graphs are told apart.
PROFILED_AS = re.compile(r'(?:RECORD_FUNCTION|RAIIAtenRecordFunctionHandle \w+)\("(?P<name>[^"]+)"')


def graph_key(name: str, compile_id: str, backward: bool) -> str:
    """A row key of a GPU launch or a library call: its name in its graph
    (`triton_poi_fused_add_0 (1/0)`, `aten::mm (0/0 backward)`), so that kernels of one name in
    two graphs, or in a forward and its backward, are rows of their own."""
    return f"{name} ({compile_id}{' backward' if backward else ''})"


def unit_key(unit: dict) -> str:
    """A compiled unit's row key: a C++ kernel's range name (its graph's), else the
    `graph_key` of a unit the profile places in a graph."""
    if "profiled_as" in unit:
        return unit["profiled_as"]
    name = unit["name"]
    return graph_key(name, unit["graph"], bool(unit.get("backward"))) if unit.get("graph") else name


def library_op(kernel: dict) -> str:
    """The ATen op a library call or fallback is profiled as: `extern_kernels.mm` as `aten::mm`,
    `torch.ops.aten.sort.stable` as `aten::sort`."""
    if kernel["kind"] == "fallback":
        return "aten::" + kernel["name"].removeprefix("torch.ops.aten.").split(".")[0]
    return "aten::" + kernel["name"].rsplit(".", 1)[-1]


def profile_name(kernel: dict, by_graph: bool) -> str:
    """A kernel's row key as its profile names it: library calls are profiled as their ATen op,
    C++ kernels under the range their source opens, library calls and Triton kernels by their
    graph where the profile tells the graphs apart (`by_graph`: its compiled units carry their
    compile)."""
    if kernel["kind"] in ("extern", "fallback"):
        name = library_op(kernel)
        return graph_key(name, kernel["compile"], kernel.get("graph") == "backward") if by_graph \
            else name
    if kernel["kind"] == "triton" and by_graph:
        return graph_key(kernel["name"], kernel["compile"], kernel.get("graph") == "backward")
    profiled = PROFILED_AS.search(kernel.get("source") or "")
    return profiled["name"] if profiled else kernel["name"]


def replayed_kernels(entry: dict, compiles: list[dict]) -> tuple[list[dict], list[tuple]]:
    """The kernels of the graphs the timed compiled call ran (backward graphs only where it ran
    a backward), each with its compile id; and those graphs' Dynamo nodes with their ops."""
    by_id = {c.get("id"): c for c in compiles}
    kernels, nodes = [], []
    for compile_id in entry.get("replayed") or []:
        compiled = by_id.get(compile_id)
        if not compiled:
            continue
        stages = compiled.get("stages", {})
        nodes += [(compile_id, node, op, line) for node, op, line in
                  dynamo_nodes(stages.get("dynamo_graph"))]
        ran = [k for k in compiled.get("kernels") or []
               if k.get("graph") != "backward" or entry.get("mode") == "forward+backward"]
        kernels += [{**k, "compile": compile_id} for k in ran]
    return kernels, nodes


class Rows:
    """The attribution rows, keyed by name."""

    def __init__(self) -> None:
        self.rows: dict[str, dict] = {}

    def row(self, name: str, kind: str, shown: str | None = None, **fields) -> dict:
        """The row of profile name `name`, shown as `shown` (the kernel's own name)."""
        return self.rows.setdefault(name, {"kernel": shown or name, "kind": kind,
                                           "compiled_us": 0.0, "eager_us": 0.0, "eager_ops": [],
                                           **fields})

    @staticmethod
    def add_eager(row: dict, op: str, node, us: float, **marks) -> None:
        row["eager_us"] += us
        row["eager_ops"].append({"op": op, "node": node, "us": us,
                                 **{k: v for k, v in marks.items() if v}})


class Owners:
    """Which kernels hold what: Dynamo nodes (provenance), user lines, and a backward graph's
    post-grad nodes by op (their names: `mm_1` is an `mm`)."""

    def __init__(self) -> None:
        self.nodes: dict[tuple, list[str]] = {}
        self.lines: dict[tuple, list[str]] = {}
        self.backward: dict[str, list[str]] = {}
        self.backward_lines: dict[tuple, list[str]] = {}

    @staticmethod
    def add(table: dict, key, name: str) -> None:
        held = table.setdefault(key, [])
        if name not in held:
            held.append(name)


def kernel_rows(rows: Rows, kernels: list[dict], by_graph: bool) -> Owners:
    """A row per compiled kernel (kernels of one profile name share it), what each holds, and
    its recomputed post-grad nodes (held by several generated kernels of a compile; a library
    call and the kernel that adds its epilogue split a node, they don't recompute it)."""
    owners = Owners()
    holders: dict[tuple, int] = {}
    for kernel in (k for k in kernels if k["kind"] in GENERATED):
        for node in kernel.get("nodes") or []:
            holders[(kernel["compile"], node)] = holders.get((kernel["compile"], node), 0) + 1
    for kernel in kernels:
        name, compile_id = profile_name(kernel, by_graph), kernel["compile"]
        shown = library_op(kernel) if kernel["kind"] in ("extern", "fallback") else kernel["name"]
        row = rows.row(name, kernel["kind"], shown, source=[], lines=[], recomputed=[])
        row["source"].append({"compile": compile_id, "name": kernel["name"],
                              "graph": kernel.get("graph")})
        row["lines"] = sorted(set(row["lines"]) | set(kernel.get("lines") or []))
        row["recomputed"] += [n for n in kernel.get("nodes") or []
                              if holders.get((compile_id, n), 0) > 1]
        for node in kernel.get("dynamo_nodes") or []:
            owners.add(owners.nodes, (compile_id, node), name)
        for line in kernel.get("lines") or []:
            owners.add(owners.lines, (compile_id, line), name)
        if kernel.get("graph") == "backward":
            for node in kernel.get("nodes") or []:
                owners.add(owners.backward, op_key(NUMBERED.sub("", node)), name)
            for line in kernel.get("lines") or []:
                owners.add(owners.backward_lines, (compile_id, line), name)
    return owners


def assign_eager(rows: Rows, units: list[dict], nodes: list[tuple],
                 owners: Owners) -> list[dict]:
    """Each eager unit's time onto the kernels that hold its Dynamo node (else its node's user
    line); then units left onto backward kernels holding post-grad nodes of their op; the units
    no kernel holds, returned."""
    def give(unit: dict, us: float, kernels: list[str], node, matched: str) -> None:
        """Split over the kernels holding it by their compiled time (evenly where none has any):
        a matmul's library call and the kernel adding its bias share the linear's eager time
        as they share its compiled time."""
        weights = [rows.rows[name]["compiled_us"] for name in kernels]
        total = sum(weights)
        for name, weight in zip(kernels, weights):
            rows.add_eager(rows.rows[name], unit["name"], node,
                           us * (weight / total if total else 1 / len(kernels)),
                           matched=matched, shared=len(kernels) if len(kernels) > 1 else None)
    by_op: dict[str, list[dict]] = {}
    for unit in (u for u in units if not u.get("backward")):
        by_op.setdefault(op_key(unit["name"]), []).append(unit)
    nodes_of: dict[str, list[tuple]] = {}
    for compile_id, node, op, line in nodes:
        nodes_of.setdefault(op, []).append((compile_id, node, line))
    left: list[dict] = []
    placed: dict[tuple, list[tuple]] = {}  # a forward unit -> the Dynamo nodes it was given to
    for op, op_units in by_op.items():
        op_nodes = nodes_of.get(op, [])
        if not op_nodes:
            left += op_units
            continue
        in_order = len(op_units) == len(op_nodes) and all(
            u["occurrence"] is not None for u in op_units)
        pairs = zip(op_units, ([n] for n in op_nodes)) if in_order else (
            (u, op_nodes) for u in op_units)
        for unit, its_nodes in pairs:
            placed[(unit["name"], unit["occurrence"])] = its_nodes
            for compile_id, node, line in its_nodes:
                share = unit["us"] / len(its_nodes)
                held_by = owners.nodes.get((compile_id, node))
                on_line = owners.lines.get((compile_id, line))
                if held_by:
                    give(unit, share, held_by, node, "order" if in_order else "name")
                elif on_line:
                    give(unit, share, on_line, node, "line")
                else:
                    left.append({**unit, "us": share, "node": node})
    still: list[dict] = []
    for unit in left + [u for u in units if u.get("backward")]:
        if unit.get("backward") == ACCUMULATE:
            still.append(unit)
            continue
        forward = unit.get("forward") or {}
        its_nodes = placed.get((forward.get("name"), forward.get("occurrence")), [])
        on_lines = list(dict.fromkeys(
            name for compile_id, _, line in its_nodes
            for name in owners.backward_lines.get((compile_id, line), [])))
        of_op = owners.backward.get(op_key(unit["name"]), [])
        held_by = of_op + [key for key in backward_calls(rows, unit["name"]) if key not in of_op]
        if on_lines:  # of those, the kernels holding a node of its op where there are some
            give(unit, unit["us"], [k for k in on_lines if k in held_by] or on_lines,
                 its_nodes[0][1] if len(its_nodes) == 1 else None, "backward line")
        elif held_by:
            give(unit, unit["us"], held_by, unit.get("node"), "backward name")
        else:
            still.append(unit)
    return still


def backward_calls(rows: Rows, op: str) -> list[str]:
    """The rows of a backward graph's library calls of `op` (`aten::mm`), one per graph."""
    return [key for key, row in rows.rows.items() if row["kernel"] == op
            and any(source.get("graph") == "backward" for source in row.get("source") or [])]


def compiled_time(rows: Rows, units: list[dict]) -> tuple[dict[str, dict], dict[str, dict]]:
    """Each compiled unit's time onto its kernel's row; the units no row holds (name and time),
    and the CUDA graph replays (a unit holding the kernels it ran, `inside`), by row key."""
    compiled: dict[str, dict] = {}
    replays: dict[str, dict] = {}
    for unit in units:
        key = unit_key(unit)
        if "inside" in unit:
            replay = replays.setdefault(key, {**unit, "us": 0.0, "inside": {}})
            replay["us"] += unit["us"]
            for kernel, us in unit["inside"].items():
                replay["inside"][kernel] = replay["inside"].get(kernel, 0.0) + us
        elif key in rows.rows:
            rows.rows[key]["compiled_us"] += unit["us"]
        else:
            compiled.setdefault(key, {"name": unit["name"], "us": 0.0})["us"] += unit["us"]
    return compiled, replays


def replay_row(rows: Rows, key: str, unit: dict) -> None:
    """A CUDA graph replay as one row: the device time of the kernels it ran (each `inside`, as
    the profiler names it), and the rows of its graph's kernels that had no launch of their own
    (they ran inside it), with the eager ops they replaced."""
    graph, backward = unit.get("graph"), bool(unit.get("backward"))
    row = rows.row(key, "cudagraph", "CUDA graph replay" + (f" of {graph}" if graph else "")
                   + (" (backward)" if backward else ""), source=[], lines=[], recomputed=[])
    row["compiled_us"] += unit["us"]
    row["inside"] = [{"kernel": k, "compiled_us": us}
                     for k, us in sorted(unit["inside"].items(), key=lambda item: -item[1])]
    for name, held in list(rows.rows.items()):
        sources = held.get("source") or []
        if held is row or held["compiled_us"] or not sources or any(
                s["compile"] != graph or (s.get("graph") == "backward") != backward
                for s in sources):
            continue
        del rows.rows[name]
        row["source"] += sources
        row["lines"] = sorted(set(row["lines"]) | set(held["lines"]))
        row["recomputed"] += held["recomputed"]
        row["eager_us"] += held["eager_us"]
        for op in held["eager_ops"]:  # an op split over the graph's kernels is whole in it
            same = next((o for o in row["eager_ops"] if (o["op"], o["node"], o.get("matched"))
                         == (op["op"], op["node"], op.get("matched"))), None)
            if same:
                same["us"] += op["us"]
            else:
                row["eager_ops"].append({k: v for k, v in op.items() if k != "shared"})


def leftover_rows(rows: Rows, compiled: dict[str, dict], eager_left: list[dict]) -> None:
    """Compiled work no kernel of the graphs accounts for: paired by name with eager work
    left over (the same op run outside the graphs on both sides), else compiled only; the eager
    work left, one row."""
    for key, work in compiled.items():
        same = [u for u in eager_left if u["name"] == work["name"]]
        row = rows.row(key, "both sides" if same else "compiled only", work["name"])
        row["compiled_us"] += work["us"]
        for unit in same:
            rows.add_eager(row, unit["name"], unit.get("node"), unit["us"])
            eager_left.remove(unit)
    if eager_left:
        row = rows.row("eager work no compiled kernel accounts for", "eager only")
        for unit in eager_left:
            rows.add_eager(row, unit["name"], unit.get("node"), unit["us"])


def attribute(entry: dict, compiles: list[dict]) -> dict:
    """The attribution of a timing entry that holds its profiles' units (`kernels.units`)."""
    kernels = entry["kernels"]
    units, units_s = kernels["units"], kernels.get("units_s")
    withheld = [f"{side}: {t['withheld']}" for side, t in kernels["totals"].items()
                if t.get("withheld")]
    if withheld:
        return {"withheld": "The profiles are not a breakdown of the calls (" +
                "; ".join(withheld) + "), so neither is an attribution of them."}
    rows = Rows()
    replayed, nodes = replayed_kernels(entry, compiles)
    owners = kernel_rows(rows, replayed, any(u.get("graph") for u in units["compiled"]))
    compiled, replays = compiled_time(rows, units["compiled"])
    left = assign_eager(rows, units["eager"], nodes, owners)
    for key, unit in replays.items():
        replay_row(rows, key, unit)
    leftover_rows(rows, compiled, left)
    out_rows = [r for r in rows.rows.values() if r["compiled_us"] or r["eager_us"]]
    sums = {side: sum(u["us"] for u in units[side]) for side in ("eager", "compiled")}
    basis = "cold" if entry.get("device") == "cuda" else "warm"
    e2e = {side: entry["e2e"][basis][side]["median_ms"] * 1e3 for side in sums}
    out_rows.append({"kernel": "outside kernels (launch, framework, Python)", "kind": "outside",
                     "eager_us": max(e2e["eager"] - sums["eager"], 0.0),
                     "compiled_us": max(e2e["compiled"] - sums["compiled"], 0.0),
                     "eager_ops": []})
    for row in out_rows:
        row["saved_us"] = row["eager_us"] - row["compiled_us"]
        row["slower"] = slower_reason(row)
    out_rows.sort(key=lambda r: -r["saved_us"])
    add_bytes(out_rows, kernels.get("compiled") or [])
    steps = waterfall(out_rows, e2e["eager"], e2e["compiled"])
    return {"rows": out_rows, "eager_kernels_us": sums["eager"],
            "compiled_kernels_us": sums["compiled"], "eager_e2e_us": e2e["eager"],
            "compiled_e2e_us": e2e["compiled"], "e2e_series": basis, "waterfall": steps,
            "headline": headline(steps, sums["eager"], sums["compiled"]), "error": ERROR,
            "bytes": BYTES["cuda" if entry.get("device") == "cuda" else "cpu"],
            "cost_s": units_s}
