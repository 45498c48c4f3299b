"""Layered graph layout: Graphviz `dot` when it is installed and the graph is small enough,
else a fast layered layout of our own (longest-path layers, barycenter ordering).

`dot` is the field standard for few crossings, and it also draws expanded module groups as
nested boxes (clusters) and routes edges around them, ending each at its arrow tip. Its cost grows
fast (measured here, 2 cores: 1,000 nodes 0.4 s, 2,000 nodes 3.4 s, 5,000 nodes 37-120 s; a
dense 1,150-node graph with 3 inputs per node over 8 s), so graphs past `DOT_MAX_NODES` use the
fallback, and so does any graph `dot` cannot lay out within the `layout_seconds` limit
(`compiler_core/limits.py`): the fallback lays out 5,000 nodes in a fraction of a second with
straight edges and no group boxes. `Layout.note` says why the fallback was used. Every box is
sized to hold its label, and no two boxes overlap, so labels drawn inside their boxes never
overlap either.

Units are points (1/72 inch, as `dot` reports them); y grows downwards, inputs at the top.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import defaultdict
from dataclasses import dataclass, field

from ..limits import limit

DOT_MAX_NODES = 1200
# A report lays out with `dot` views of up to DOT_VIEW_ITEMS items (a second or so each; a dense
# graph of 1,100 took over 30 s) while their items stay within DOT_REPORT_ITEMS in all (in graph
# order): which views get `dot` depends on the log alone, never on how fast the machine is.
DOT_VIEW_ITEMS, DOT_REPORT_ITEMS = 600, 1500
NODE_H = 34.0  # two text lines: name, target
CHAR_W = 6.6  # an 11px monospace-ish character, with margin for the bold name
MIN_W, MAX_W = 54.0, 216.0
X_SEP, Y_SEP = 144.0, 64.0  # fallback spacing: a box of MAX_W fits with room for edges
FALLBACK_W = 120.0  # fallback box width (labels are cut to it; hover shows them whole)


@dataclass
class Cluster:
    """An expanded group drawn as a box around its members (nodes and nested clusters)."""
    id: str
    label: str
    parent: str | None
    members: list[str] = field(default_factory=list)


@dataclass
class Layout:
    engine: str
    positions: dict[str, tuple[float, float]]  # node centre
    sizes: dict[str, tuple[float, float]]  # node width, height
    routes: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # x0,y0,x1,y1,...
    boxes: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)  # x0,y0,x1,y1
    note: str | None = None  # why the layered fallback was used instead of `dot`


def box_width(labels: list[str]) -> float:
    return min(MAX_W, max(MIN_W, max(len(text) for text in labels) * CHAR_W + 14))


def _dot_source(nodes: list[str], edges: list[tuple[str, str]], widths: dict,
                clusters: list[Cluster]) -> tuple[str, dict]:
    index = {node: f"n{i}" for i, node in enumerate(nodes)}
    lines = ["digraph G {", "graph [rankdir=TB, nodesep=0.22, ranksep=0.4];",
             f'node [shape=box, fixedsize=true, label="", height={NODE_H / 72:.3f}];']
    by_parent = defaultdict(list)
    for i, cluster in enumerate(clusters):
        by_parent[cluster.parent].append((i, cluster))

    def emit(parent):
        for i, cluster in by_parent[parent]:
            lines.append(f"subgraph cluster_{i} {{ label={json.dumps(cluster.label)}; fontsize=11;"
                         " labeljust=l; margin=10;")
            lines.extend(f"{index[m]};" for m in cluster.members if m in index)
            emit(cluster.id)
            lines.append("}")
    emit(None)
    lines += [f"{index[n]} [width={widths[n] / 72:.3f}];" for n in nodes]
    lines += [f"{index[a]} -> {index[b]};" for a, b in edges]
    return "\n".join(lines) + "}", index


def _numbers(text: str) -> list[float]:
    return [float(v) for v in text.replace(",", " ").split()]


class DotUnavailable(Exception):
    """Why `dot` gave no layout (the message is the layout's note)."""


def dot_layout(nodes: list[str], edges: list[tuple[str, str]], widths: dict,
               clusters: list[Cluster], seconds: float,
               most: tuple[int, str] | None = None) -> Layout:
    """Positions, edge routes and cluster boxes from `dot -Tjson`, killed after `seconds`;
    DotUnavailable when dot is missing, fails, takes too long, or the graph has more items than
    `most` allows (the caller's budget: (items, why))."""
    dot = shutil.which("dot")
    if dot is None:
        raise DotUnavailable("Graphviz dot is not installed")
    if len(nodes) > DOT_MAX_NODES:
        raise DotUnavailable(f"{len(nodes):,} items: dot is used up to {DOT_MAX_NODES:,}")
    if most is not None and len(nodes) > most[0]:
        raise DotUnavailable(f"{len(nodes):,} items: {most[1]}")
    if seconds <= 0:
        raise DotUnavailable("no time was left for dot (layout_seconds)")
    source, index = _dot_source(nodes, edges, widths, clusters)
    try:
        out = subprocess.run([dot, "-Tjson"], input=source, text=True, capture_output=True,
                             timeout=seconds, check=True).stdout
    except subprocess.TimeoutExpired:
        raise DotUnavailable(f"dot took over {seconds:g} s (the layout_seconds limit)") from None
    except (OSError, subprocess.SubprocessError):
        raise DotUnavailable("dot failed on this graph") from None
    try:
        return _read_dot(json.loads(out), nodes, index, widths, clusters)
    except (ValueError, KeyError, IndexError, TypeError):
        raise DotUnavailable("dot's output could not be read") from None


def _read_dot(out: dict, nodes: list[str], index: dict, widths: dict,
              clusters: list[Cluster]) -> Layout:
    height = _numbers(out["bb"])[3]
    by_name = {v: k for k, v in index.items()}
    by_gvid, boxes, positions = {}, {}, {}
    for obj in out.get("objects", []):
        name = obj["name"]
        if name.startswith("cluster_"):
            x0, y0, x1, y1 = _numbers(obj["bb"])
            boxes[clusters[int(name.removeprefix("cluster_"))].id] = (x0, height - y1, x1, height - y0)
        elif name in by_name and "pos" in obj:
            x, y = _numbers(obj["pos"])
            positions[by_name[name]] = (x, height - y)
            by_gvid[obj["_gvid"]] = by_name[name]
    routes = {}
    for edge in out.get("edges", []):
        parts = edge.get("pos", "").split()
        if not parts or edge["tail"] not in by_gvid or edge["head"] not in by_gvid:
            continue
        tip = _numbers(parts[0][2:]) if parts[0].startswith("e,") else None
        points = [v for p in parts if not p.startswith(("e,", "s,")) for v in _numbers(p)]
        points += tip or []  # the curve's control points, then the arrow's tip
        routes[(by_gvid[edge["tail"]], by_gvid[edge["head"]])] = [
            round(v if i % 2 == 0 else height - v, 1) for i, v in enumerate(points)]
    if len(positions) != len(nodes):
        raise ValueError("dot left nodes out")
    return Layout("dot", positions, {n: (widths[n], NODE_H) for n in nodes}, routes, boxes)


def layered_positions(nodes: list[str], edges: list[tuple[str, str]],
                      sweeps: int = 4) -> dict[str, tuple[float, float]]:
    """Longest-path layers, then barycenter sweeps. `nodes` come in graph order (FX order, or a
    group's first member's), which is a topological order once the edges that go backwards in it
    (only a collapsed graph has them: cycles between groups) are left out."""
    order = {node: i for i, node in enumerate(nodes)}
    above: dict[str, list[str]] = {n: [] for n in nodes}
    below: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        if order[a] < order[b]:
            above[b].append(a)
            below[a].append(b)
    layer = {}
    for node in nodes:
        layer[node] = max((layer[p] + 1 for p in above[node]), default=0)
    for node in nodes:  # sources sit just above their first consumer, as `dot` puts them
        if not above[node] and below[node]:
            layer[node] = min(layer[s] for s in below[node]) - 1
    rows: dict[int, list[str]] = defaultdict(list)
    for node in nodes:  # graph order is a good first guess
        rows[layer[node]].append(node)
    levels = sorted(rows)
    x = {n: float(i) for row in rows.values() for i, n in enumerate(row)}
    for sweep in range(sweeps):
        down = sweep % 2 == 0
        near_of = above if down else below
        for level in levels if down else reversed(levels):
            row = rows[level]
            for node in row:
                near = near_of[node]
                if near:
                    x[node] = sum(x[n] for n in near) / len(near)
            row.sort(key=x.__getitem__)
            _spread(row, x)
    low = min(x.values(), default=0.0)
    first = levels[0] if levels else 0
    return {n: ((x[n] - low) * X_SEP + X_SEP / 2, (layer[n] - first) * Y_SEP + Y_SEP / 2)
            for n in nodes}


def _spread(row: list[str], x: dict[str, float]) -> None:
    """Keep the row's order and mean position but at least one unit apart."""
    if len(row) < 2:
        return
    wanted = sum(x[n] for n in row) / len(row)
    for left, right in zip(row, row[1:]):
        x[right] = max(x[right], x[left] + 1.0)
    shift = wanted - sum(x[n] for n in row) / len(row)
    for node in row:
        x[node] += shift


def layout(nodes: list[str], edges: list[tuple[str, str]], widths: dict[str, float],
           clusters: list[Cluster], seconds: float | None = None,
           dot_most: tuple[int, str] | None = None) -> Layout:
    """`dot` with clusters where it can within `seconds` (default: the `layout_seconds` limit)
    and the graph has at most `dot_most` items; else the layered fallback (straight edges, no
    boxes), with a note saying why."""
    try:
        return dot_layout(nodes, edges, widths, clusters,
                          limit("layout_seconds") if seconds is None else seconds, dot_most)
    except DotUnavailable as why:
        return Layout("layered", layered_positions(nodes, edges),
                      {n: (min(widths[n], FALLBACK_W), NODE_H) for n in nodes}, note=str(why))
