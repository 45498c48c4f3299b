"""Layered graph layout: Graphviz `dot` when it is installed and the graph is small enough,
else a fast layered layout of our own (longest-path layers, barycenter ordering).

`dot` is the field standard for few crossings, but its cost grows fast (measured here, 2 cores:
1,000 nodes 0.4 s, 2,000 nodes 3.4 s, 5,000 nodes 37-120 s), so graphs past `DOT_MAX_NODES` use
the fallback, which lays out 5,000 nodes in a fraction of a second. Big graphs are usually shown
collapsed by module (see `collapse`), which brings them back under the `dot` limit.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import defaultdict

import networkx as nx

DOT_MAX_NODES = 1200
DOT_TIMEOUT_S = 8
X_SEP, Y_SEP = 1.0, 1.0  # fallback spacing, in the same units (inches) `dot` reports


def build_graph(nodes: list[dict]) -> nx.DiGraph:
    graph = nx.DiGraph()
    for node in nodes:
        graph.add_node(node["id"], **node)
    for node in nodes:
        for source in node["inputs"]:
            if source in graph:
                graph.add_edge(source, node["id"])
    return graph


def module_prefix(module: str | None, depth: int) -> str | None:
    """`L['self'].layers.3.attn` at depth 2 -> `L['self'].layers.3`; depth 0 keeps it whole."""
    if not module:
        return None
    parts = module.split(".")
    return ".".join(parts[: depth + 1]) if depth else module


def collapse(graph: nx.DiGraph, depth: int) -> nx.DiGraph:
    """One node per module (cut at `depth`); nodes outside any module stay as they are."""
    group_of = {n: module_prefix(a.get("module"), depth) or n for n, a in graph.nodes(data=True)}
    members: dict[str, list[str]] = defaultdict(list)
    for node, group in group_of.items():
        members[group].append(node)
    out = nx.DiGraph()
    for group, names in members.items():
        if len(names) == 1 and names[0] == group:
            out.add_node(group, **graph.nodes[group])
            continue
        first = graph.nodes[names[0]]
        lines = [graph.nodes[n]["line"] for n in names if graph.nodes[n].get("line")]
        out.add_node(group, id=group, name=group, op="module", target=f"{len(names)} nodes",
                     shape=graph.nodes[names[-1]].get("shape"), dtype=first.get("dtype"),
                     line=min(lines) if lines else None, module=group, graph=first.get("graph"),
                     size=len(names), inputs=[])
    for source, target in graph.edges:
        a, b = group_of[source], group_of[target]
        if a != b:
            out.add_edge(a, b)
    return out


def dot_positions(graph: nx.DiGraph) -> dict[str, tuple[float, float]] | None:
    """Node centres from `dot -Tplain`, or None when dot is missing, fails or takes too long."""
    dot = shutil.which("dot")
    if dot is None or graph.number_of_nodes() > DOT_MAX_NODES:
        return None
    index = {node: f"n{i}" for i, node in enumerate(graph.nodes)}
    lines = ["digraph G {", "graph [rankdir=TB, nodesep=0.25, ranksep=0.45, splines=false];",
             'node [shape=box, width=1.4, height=0.4, fixedsize=true, label=""];']
    lines += [f"{index[n]};" for n in graph.nodes]
    lines += [f"{index[a]} -> {index[b]};" for a, b in graph.edges]
    try:
        plain = subprocess.run([dot, "-Tplain"], input="\n".join(lines) + "}", text=True,
                               capture_output=True, timeout=DOT_TIMEOUT_S, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    by_id = {v: k for k, v in index.items()}
    positions = {}
    for line in plain.splitlines():
        parts = line.split()
        if parts and parts[0] == "node":
            positions[by_id[parts[1]]] = (float(parts[2]), float(parts[3]))
    return positions if len(positions) == graph.number_of_nodes() else None


def _layers(dag: nx.DiGraph) -> dict[str, int]:
    """Longest-path layers, then sources moved down next to their first consumer (as `dot`
    does, so parameters sit beside the op that uses them instead of all in the top row)."""
    layer = {}
    for node in nx.topological_sort(dag):
        layer[node] = max((layer[p] + 1 for p in dag.predecessors(node)), default=0)
    for node in dag.nodes:
        if dag.in_degree(node) == 0 and dag.out_degree(node):
            layer[node] = min(layer[s] for s in dag.successors(node)) - 1
    return layer


def _acyclic(graph: nx.DiGraph) -> nx.DiGraph:
    """FX graphs are DAGs, but a collapsed one may have cycles: keep the edges that go forward
    in node order (FX order, or a group's first member's) and drop the others."""
    if nx.is_directed_acyclic_graph(graph):
        return graph
    order = {node: i for i, node in enumerate(graph.nodes)}
    dag = graph.copy()
    dag.remove_edges_from([(a, b) for a, b in graph.edges if order[a] >= order[b]])
    return dag


def layered_positions(graph: nx.DiGraph, sweeps: int = 4) -> dict[str, tuple[float, float]]:
    dag = _acyclic(graph)
    layer = _layers(dag)
    rows: dict[int, list[str]] = defaultdict(list)
    for node in dag.nodes:  # graph order is FX order: a good first guess
        rows[layer[node]].append(node)
    levels = sorted(rows)
    x = {n: float(i) for row in rows.values() for i, n in enumerate(row)}
    for sweep in range(sweeps):
        down = sweep % 2 == 0
        for level in levels if down else reversed(levels):
            row = rows[level]
            for node in row:
                near = list(dag.predecessors(node) if down else dag.successors(node))
                if near:
                    x[node] = sum(x[n] for n in near) / len(near)
            row.sort(key=lambda n: x[n])
            _spread(row, x)
    top = levels[-1] if levels else 0
    return {n: (x[n] * X_SEP, (top - layer[n]) * Y_SEP) for n in dag.nodes}


def _spread(row: list[str], x: dict[str, float]) -> None:
    """Keep the row's order and mean position but at least X_SEP apart."""
    if not row:
        return
    wanted = sum(x[n] for n in row) / len(row)
    for left, right in zip(row, row[1:]):
        x[right] = max(x[right], x[left] + 1.0)
    shift = wanted - sum(x[n] for n in row) / len(row)
    for node in row:
        x[node] += shift


def layout(graph: nx.DiGraph) -> tuple[dict[str, tuple[float, float]], str]:
    """Positions (y grows upwards, inputs at the top) and the engine that made them."""
    positions = dot_positions(graph)
    if positions is not None:
        return positions, "dot"
    return layered_positions(graph), "layered"
