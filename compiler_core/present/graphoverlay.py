"""Overlays of a graph view: the kernel each node fused into, and the kernels' measured time.

The links are the result's own: each kernel lists the post-grad nodes it came from (`nodes`, from
Inductor's provenance tracking) and their Dynamo graph nodes (`dynamo_nodes`); an AOT or Dynamo
node reaches its kernels through the post-grad nodes it is or became (`parsers.nodelinks`).
Times are the per-kernel rows the timings measured for the compiled callable that ran this
compile (`timings[i].kernels.compiled`; a library kernel such as `extern_kernels.mm` is the
profiler's `aten::mm`). A kernel's share is its time over the time of
every measured kernel of that callable (framework rows left out).
"""

from __future__ import annotations

NOT_KERNELS = {"framework"}


def kernels_by_node(compiled: dict, stage: str, nodes: list[dict],
                    links: dict[str, dict]) -> dict[str, list[int]]:
    """Node id -> indices into the compile's kernel list: the kernels of the post-grad nodes the
    node is or became (`links`, see `parsers.nodelinks`); a Dynamo node's also where a kernel
    names it (`dynamo_nodes`)."""
    by_key: dict[str, list[int]] = {}
    for index, kernel in enumerate(compiled.get("kernels") or []):
        keys = [f"{kernel.get('graph', '')}:{name}" for name in kernel["nodes"]]
        if stage == "dynamo_graph":
            keys += [f"dynamo:{name}" for name in kernel.get("dynamo_nodes") or []]
        for key in keys:
            if index not in by_key.setdefault(key, []):
                by_key[key].append(index)
    out: dict[str, list[int]] = {}
    for node in nodes:
        keys = [*links.get(node["id"], {}).get("post", []),
                *([f"dynamo:{node['name']}"] if stage == "dynamo_graph" else [])]
        found = sorted({index for key in keys for index in by_key.get(key, [])})
        if found:
            out[node["id"]] = found
    return out


def _profiler_name(kernel_name: str) -> str:
    return "aten::" + kernel_name.removeprefix("extern_kernels.") if kernel_name.startswith(
        "extern_kernels.") else kernel_name


def _figures(value: float) -> float:
    """Three significant figures: a small kernel's share beside a big one's stays above 0."""
    return float(f"{value:.3g}")


def kernel_times(result: dict, compiled: dict) -> list[dict | None]:
    """Per kernel of the compile: {us, share} where the timings measured it, else None."""
    callables = {call["callable"] for call in result.get("calls") or []
                 if compiled["id"] in (call.get("entries") or [])}
    rows = [row for timing in result.get("timings") or [] if timing.get("callable") in callables
            for row in (timing.get("kernels") or {}).get("compiled") or []
            if row.get("kind") not in NOT_KERNELS]
    total = sum(row["us_per_call"] for row in rows) or None
    by_name = {row["name"]: row["us_per_call"] for row in rows}
    out = []
    for kernel in compiled.get("kernels") or []:
        us = by_name.get(_profiler_name(kernel["name"]))
        out.append({"us": _figures(us), "share": _figures(us / total)} if us and total else None)
    return out


def kernel_table(result: dict, compiled: dict) -> list[dict]:
    """The compile's kernels as the graph view shows them: name, kind, time and share."""
    times = kernel_times(result, compiled)
    return [{"name": kernel["name"], "kind": kernel["kind"], "graph": kernel.get("graph", ""),
             **(time or {"us": None, "share": None})}
            for kernel, time in zip(compiled.get("kernels") or [], times)]
