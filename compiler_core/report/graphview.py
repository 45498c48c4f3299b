"""The graph view of one stage: nodes, edges and positions, ready for the browser to draw.

Served by the web app (`GET /api/results/KEY/graph`) and embedded in static reports, so both
draw the same layout. Graphs past `COLLAPSE_OVER` nodes are shown collapsed by module unless
asked otherwise: `collapse_to` is "auto", "off" or a module depth (1 = children of the root).
"""

from __future__ import annotations

from .fxgraph import stage_nodes
from .layout import DOT_MAX_NODES, build_graph, collapse, layout
from .stages import GRAPH_STAGES

COLLAPSE_OVER = 1500
FIELDS = ("id", "name", "op", "target", "shape", "dtype", "line", "module", "graph")


def module_depth(nodes: list[dict]) -> int:
    return max((n["module"].count(".") for n in nodes if n.get("module")), default=0)


def choose_depth(graph, deepest: int) -> int | None:
    """The deepest module cut that brings the graph under the `dot` limit."""
    for depth in range(deepest, 0, -1):
        if collapse(graph, depth).number_of_nodes() <= DOT_MAX_NODES:
            return depth
    return 1 if deepest else None


def graph_view(artifact: dict, collapse_to: str | int = "auto") -> dict:
    """Raises ValueError for a stage that is not an FX graph."""
    if artifact["stage"] not in GRAPH_STAGES:
        raise ValueError(f"stage {artifact['stage']!r} has no graph view")
    nodes = stage_nodes(artifact)
    graph = build_graph(nodes)
    deepest = module_depth(nodes)
    depth = collapse_to
    if collapse_to == "auto":
        depth = choose_depth(graph, deepest) if len(nodes) > COLLAPSE_OVER else None
    elif collapse_to == "off":
        depth = None
    if depth is not None:
        graph = collapse(graph, depth)
    positions, engine = layout(graph)
    index = {node: i for i, node in enumerate(graph.nodes)}
    return {
        "stage": artifact["stage"], "compile_id": artifact["compile_id"],
        "engine": engine, "total_nodes": len(nodes), "collapsed_depth": depth,
        "module_depth": deepest,
        "nodes": [{**{k: attrs.get(k) for k in FIELDS}, "size": attrs.get("size", 1),
                   "x": round(positions[node][0], 3), "y": round(positions[node][1], 3)}
                  for node, attrs in graph.nodes(data=True)],
        "edges": [[index[a], index[b]] for a, b in graph.edges],
    }
