"""Kernel attribution: what each compiled kernel replaced of the eager program, and what it saved
(a timing entry's `attribution`, built from its profiles' units, `runtime/measure/attribution.py`,
and the compiles' provenance).

The join: a compiled kernel holds post-grad nodes (Inductor's provenance), which came from Dynamo
graph nodes (`postToPre`): the user's torch calls, each of which eager ran as one top-level ATen
op (`torch._C._nn.gelu(y)` as `aten::gelu`, `a * b` as `aten::mul`). The n-th eager call of an op
is the n-th Dynamo node of that op, in graph order over the graphs the compiled call ran
(`matched` "order"); where the counts differ, an op's eager time is split evenly over its nodes
(`matched` "name"); a node no kernel holds goes to the kernels written for its user line
(`matched` "line": a pattern Inductor replaced can lose its provenance). An eager backward op
goes to the backward kernels written for the user line of the Dynamo node its forward op was
matched to (`matched` "backward line": the profiler's sequence numbers tie it to that forward op,
`runtime/measure/attribution.py`; `gelu_backward`, which Inductor decomposes, has no node of its
name), else to the backward kernels holding post-grad nodes of its op (`matched` "backward
name"). A node
whose work several kernels share (split or recomputed) has its eager time split over them by
their compiled time. Eager work no kernel holds (views, no-ops Inductor removed, ops outside the
graphs) and compiled work that holds no eager op are rows of their own, and so is the time
outside kernels on each side, so that the rows add up to each side's call.
"""

from __future__ import annotations

import re

OPERATORS = {"*": "mul", "+": "add", "-": "sub", "/": "div", "@": "matmul", "**": "pow",
             "//": "floor_divide", "%": "remainder"}
ALIASES = {"iadd": "add", "imul": "mul", "isub": "sub", "itruediv": "div", "truediv": "div",
           "floordiv": "floor_divide", "imatmul": "matmul"}
NODE_LINE = re.compile(r'^\s+(?P<node>\w+)(?::\s*"[^"]*")?\s*=\s*(?P<expr>.*?)'
                       r'(?:;\s+\w+(?:\s*=\s*\w+)*\s*=\s*None)?\s*$')
CALL = re.compile(r"^(?P<callee>[\w.]+)\(")
BINARY = re.compile(r"^[\w.]+ (?P<op>\*\*|//|[*+\-/@%]) [\w.]+$")
# FX writes `operator.iadd(a, b)` as `a += b;  iadd = a`
INPLACE = re.compile(r"^\s+[\w.]+ (?P<op>\*\*|//|[*+\-/@%])= [\w.]+;\s+(?P<node>\w+)")
FALLBACK_CALL = re.compile(r"^[ \t]+\w+ = torch\.ops\.aten\.(?P<op>\w+)\.\w+\(", re.M)
FILE_COMMENT = re.compile(r"^\s+# File: (?P<file>.*?):(?P<line>\d+) in ")
NUMBERED = re.compile(r"_\d+$")
SOURCE_NODES = re.compile(r"# Topologically Sorted Source Nodes: \[(?P<nodes>[^\[\]\n]*)\]")
GENERATED = ("triton", "cpp")
SLOWER_BY_US = 1.0  # a kernel is marked slower past this and 5 % of its eager ops' time
SLOWER_BY_SHARE = 0.05
ERROR = ("Each side's kernel rows add up to its profile's busy time per call (the same profile "
         "as the per-kernel rows, to rounding); the rows outside kernels are the end-to-end "
         "median timed without the profiler minus that time, so they carry the profiler's own "
         "effect on the kernels (a profile is withheld past 10 %).")


def op_key(name: str) -> str:
    """An op's name as both sides can share it: `aten::relu_` and Dynamo's `relu` as `relu`."""
    name = name.removeprefix("aten::")
    name = ALIASES.get(name, name)
    return name.rstrip("_") or name


def node_op(expr: str) -> str | None:
    """The op a Dynamo graph node calls, from its line's right-hand side."""
    call = CALL.match(expr)
    if call:
        return op_key(call["callee"].rsplit(".", 1)[-1])
    binary = BINARY.match(expr)
    return OPERATORS[binary["op"]] if binary else None


def dynamo_nodes(text: str, user_file: str) -> list[tuple[str, str, int | None]]:
    """(node, op, user line) of each call in a Dynamo graph's text, in graph order; the line
    from the `# File:` comment above it, where that is the user's file."""
    out, user_line = [], None
    for line in text.splitlines():
        comment = FILE_COMMENT.match(line)
        if comment:
            user_line = int(comment["line"]) if comment["file"] == user_file else None
            continue
        inplace = INPLACE.match(line)
        if inplace:
            out.append((inplace["node"], OPERATORS[inplace["op"]], user_line))
            continue
        match = NODE_LINE.match(line)
        op = node_op(match["expr"]) if match else None
        if op:
            out.append((match["node"], op, user_line))
    return out


# The range a C++ kernel opens for the profiler (Inductor's cpp.enable_kernel_profile), named by
# its graph: `graph_0_cpp_fused_add_0`, so that kernels of one name in two graphs are told apart.
PROFILED_AS = re.compile(r'(?:RECORD_FUNCTION|RAIIAtenRecordFunctionHandle \w+)\("(?P<name>[^"]+)"')


def profile_name(kernel: dict) -> str:
    """A kernel's name in the profile: library calls are profiled as their ATen op, C++ kernels
    under the range their source opens."""
    if kernel["kind"] in ("extern", "fallback"):
        return "aten::" + kernel["name"].rsplit(".", 1)[-1]
    profiled = PROFILED_AS.search(kernel.get("source") or "")
    return profiled["name"] if profiled else kernel["name"]


def fallback_kernels(output_code: str) -> list[dict]:
    """ATen ops the output code calls itself (`torch.ops.aten.X.default(...)`), with the Dynamo
    nodes of the comment above each call."""
    out: dict[str, dict] = {}
    for match in FALLBACK_CALL.finditer(output_code):
        before = output_code[max(0, match.start() - 600):match.start()]
        sources = SOURCE_NODES.findall(before)
        nodes = [n.strip() for n in sources[-1].split(",")] if sources else []
        kernel = out.setdefault(match["op"], {"name": f"torch.ops.aten.{match['op']}",
                                              "kind": "fallback", "nodes": [], "lines": [],
                                              "dynamo_nodes": []})
        kernel["dynamo_nodes"] += [n for n in nodes if n and n not in kernel["dynamo_nodes"]]
    return list(out.values())


def replayed_kernels(entry: dict, compiles: list[dict],
                     user_file: str) -> tuple[list[dict], list[tuple]]:
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
                  dynamo_nodes(stages.get("dynamo_graph", {}).get("text") or "", user_file)]
        ran = [k for k in compiled.get("kernels") or []
               if k.get("graph") != "backward" or entry.get("mode") == "forward+backward"]
        ran += fallback_kernels(stages.get("output_code", {}).get("text") or "")
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


def kernel_rows(rows: Rows, kernels: list[dict]) -> Owners:
    """A row per compiled kernel (kernels of one profile name share it), what each holds, and
    its recomputed post-grad nodes (held by several generated kernels of a compile; a library
    call and the kernel that adds its epilogue split a node, they don't recompute it)."""
    owners = Owners()
    holders: dict[tuple, int] = {}
    for kernel in (k for k in kernels if k["kind"] in GENERATED):
        for node in kernel.get("nodes") or []:
            holders[(kernel["compile"], node)] = holders.get((kernel["compile"], node), 0) + 1
    for kernel in kernels:
        name, compile_id = profile_name(kernel), kernel["compile"]
        shown = name if kernel["kind"] in ("extern", "fallback") else kernel["name"]
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
    for unit in (u for u in units if "forward" not in u):
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
    for unit in left + [u for u in units if "forward" in u]:
        forward = unit.get("forward") or {}
        its_nodes = placed.get((forward.get("name"), forward.get("occurrence")), [])
        on_lines = list(dict.fromkeys(name for compile_id, _, line in its_nodes
                                      for name in owners.backward_lines.get((compile_id, line), [])))
        held_by = owners.backward.get(op_key(unit["name"]), [])
        if on_lines:  # of those, the kernels holding a node of its op where there are some
            give(unit, unit["us"], [k for k in on_lines if k in held_by] or on_lines,
                 its_nodes[0][1] if len(its_nodes) == 1 else None, "backward line")
        elif held_by:
            give(unit, unit["us"], held_by, unit.get("node"), "backward name")
        else:
            still.append(unit)
    return still


def leftover_rows(rows: Rows, compiled: dict[str, float], eager_left: list[dict]) -> None:
    """Compiled work no kernel of the graphs accounts for: paired by name with eager work
    left over (the same op run outside the graphs on both sides), else compiled only; the eager
    work left, one row."""
    for name, us in compiled.items():
        same = [u for u in eager_left if u["name"] == name]
        row = rows.row(name, "both sides" if same else "compiled only")
        row["compiled_us"] += us
        for unit in same:
            rows.add_eager(row, unit["name"], unit.get("node"), unit["us"])
            eager_left.remove(unit)
    if eager_left:
        row = rows.row("eager work no compiled kernel accounts for", "eager only")
        for unit in eager_left:
            rows.add_eager(row, unit["name"], unit.get("node"), unit["us"])


def slower_reason(row: dict) -> str | None:
    """Why a kernel took longer than the eager ops it replaced, from what was measured."""
    saved = row["eager_us"] - row["compiled_us"]
    if row["kind"] in ("outside", "compiled only", "eager only") or (
            -saved <= max(SLOWER_BY_US, SLOWER_BY_SHARE * row["eager_us"])):
        return None
    ops = sorted({op["op"] for op in row["eager_ops"]})
    said = [f"took {row['compiled_us']:.1f} µs per call against {row['eager_us']:.1f} µs for the "
            f"eager op{'s' if len(ops) != 1 else ''} it replaced ({', '.join(ops) or 'none'})"]
    if row.get("recomputed"):
        said.append(f"it recomputes {', '.join(sorted(set(row['recomputed'])))}, which another "
                    "kernel computes too")
    if row["kernel"].startswith("triton_tem_"):
        said.append("a Triton template chosen by autotuning lost to eager's library call here")
    elif row["kind"] in ("extern", "fallback"):
        said.append("the same library op as eager's: the difference is its arguments' layout "
                    "or its cache conditions in the compiled call")
    if any(op.get("matched") in ("name", "backward name") for op in row["eager_ops"]):
        said.append("its eager time is an even split of an op's calls by name (eager called it "
                    "a number of times the graphs don't hold, or a backward op)")
    if not row["eager_ops"]:
        said.append("no eager op was matched to it")
    return "; ".join(said)


def waterfall(rows: list[dict], eager_e2e: float, compiled_e2e: float) -> list[dict]:
    """From eager's call to compiled's: what each kind of row saved (negative: cost)."""
    def saved(pick) -> float:
        return sum(r["saved_us"] for r in rows if pick(r))

    def fused(r):
        return r["kind"] in GENERATED and len({o["node"] for o in r["eager_ops"]}) > 1
    steps = [("fusion (kernels holding several eager ops)", saved(fused)),
             ("one-op kernels", saved(lambda r: r["kind"] in GENERATED and not fused(r))),
             ("library calls", saved(lambda r: r["kind"] in ("extern", "fallback"))),
             ("eager work removed", saved(lambda r: r["kind"] == "eager only")),
             ("other compiled work", saved(lambda r: r["kind"] in ("compiled only",
                                                                   "both sides"))),
             ("outside kernels (launch, framework, Python)",
              saved(lambda r: r["kind"] == "outside"))]
    return ([{"label": "eager call", "us": eager_e2e, "total": True}]
            + [{"label": label, "saved_us": us} for label, us in steps if abs(us) >= 0.05]
            + [{"label": "compiled call", "us": compiled_e2e, "total": True}])


def _us(us: float) -> str:
    return f"{us / 1e3:.3g} ms" if abs(us) >= 1e3 else f"{us:.3g} µs"


def headline(steps: list[dict], eager_kernels: float, compiled_kernels: float) -> str:
    parts = [f"{s['label'].split(' (')[0]} {'saved' if s['saved_us'] >= 0 else 'cost'} "
             f"{_us(abs(s['saved_us']))}" for s in steps if "saved_us" in s]
    return f"kernels {_us(eager_kernels)} -> {_us(compiled_kernels)}: " + ", ".join(parts)


BYTES = {"cuda": "Bytes moved: the compiled Triton kernels' as their per-kernel rows have them "
                 "(Inductor's kernel_num_gb, else counted from the launch's arguments); not known "
                 "for eager's kernels or library calls (the profiler records no bytes).",
         "cpu": "Bytes moved: not known on a CPU (the profiler records no bytes, and Inductor "
                "estimates them for GPU kernels only)."}


def add_bytes(rows: list[dict], compiled_rows: list[dict]) -> None:
    """A row's compiled bytes per call where its kernel's per-kernel row has them (GPU)."""
    moved = {r["name"]: r["gb_per_call"] for r in compiled_rows if r.get("gb_per_call")}
    for row in rows:
        if row["kernel"] in moved:
            row["compiled_gb"] = moved[row["kernel"]]


def attribute(entry: dict, compiles: list[dict], user_file: str) -> dict:
    """The attribution of a timing entry that holds its profiles' units (`kernels.units`)."""
    kernels = entry["kernels"]
    units, units_s = kernels["units"], kernels.get("units_s")
    withheld = [f"{side}: {t['withheld']}" for side, t in kernels["totals"].items()
                if t.get("withheld")]
    if withheld:
        return {"withheld": "The profiles are not a breakdown of the calls (" +
                "; ".join(withheld) + "), so neither is an attribution of them."}
    rows = Rows()
    replayed, nodes = replayed_kernels(entry, compiles, user_file)
    owners = kernel_rows(rows, replayed)
    compiled: dict[str, float] = {}
    for unit in units["compiled"]:  # a C++ kernel under its graph's range name
        name = unit.get("profiled_as", unit["name"])
        compiled[name] = compiled.get(name, 0.0) + unit["us"]
    for name in list(compiled):
        if name in rows.rows:
            rows.rows[name]["compiled_us"] += compiled.pop(name)
    left = assign_eager(rows, units["eager"], nodes, owners)
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
