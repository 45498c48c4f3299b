"""The graph view of one stage (served by the web app, `GET /api/results/KEY/graph`, and
embedded in static reports, so both draw the same layout): the items shown (nodes and collapsed module groups), the boxes of
expanded groups, edges with their routes, positions, and the kernel overlays, ready to draw.

What is expanded is either given (`expand`: the exact set of group ids, as the page keeps it while
the user opens and closes groups) or chosen by `collapse`: "auto" (a readable first view, see
`ModuleTree.expansion`), "off" (every group open) or a module depth N (groups deeper than N
stay closed). Nodes hidden inside closed groups are listed under `hidden`, so that a search finds
them too.
"""

from __future__ import annotations

from .fxgraph import stage_nodes
from .graphoverlay import kernel_table, kernels_by_node
from .layout import Cluster, box_width, layout
from .modulegroups import ModuleTree
from .names import short_name
from .stages import GRAPH_STAGES

NODE_FIELDS = ("name", "op", "target", "shape", "dtype", "line", "module")


def _group_title(tree: ModuleTree, gid: str) -> str:
    group = tree.groups[gid]
    return f"{group.label} · {group.cls}"


def _item(tree: ModuleTree, item: str, kernels: dict[str, list[int]]) -> dict:
    """One shown item, without its position; None fields left out (a 5,000-node answer is big)."""
    if item in tree.groups:
        group = tree.groups[item]
        return {"id": item, "kind": "group", "name": _group_title(tree, item),
                "target": f"{group.size} node{'s' * (group.size != 1)}", "op": "module",
                "module": group.path, "size": group.size,
                "kernels": kernels.get(item, [])}
    node = tree.nodes[item]
    row = {"id": item, "kind": "node", **{k: node[k] for k in NODE_FIELDS if node.get(k) is not None}}
    if (lines := box_lines(node)) != [node["name"], node.get("target") or ""]:
        row["label"] = lines  # what the box shows, when not its name and target
    if kernels.get(item):
        row["kernels"] = kernels[item]
    return row


def box_lines(node: dict) -> list[str]:
    """The two lines on a node's box: its name, shortened to its module path where it names a
    lifted parameter, and its target, unless it repeats the name (a placeholder's does, as
    `L_x_` for `l_x_` in Dynamo's graph). The hover card and the search keep both in full."""
    target = node.get("target") or ""
    return [short_name(node["name"]) or node["name"],
            "" if target.lower() == node["name"].lower() else target]


def _clusters(tree: ModuleTree, expanded: set[str], shown: set[str]) -> list[Cluster]:
    clusters = []
    for gid in tree.open_groups(expanded):
        members = [c for c in tree.groups[gid].children if c in shown]
        clusters.append(Cluster(gid, _group_title(tree, gid), tree.groups[gid].parent, members))
    return clusters


def graph_view(compiled: dict, stage: str, result: dict, collapse: str | int = "auto",
               expand: list[str] | None = None) -> dict:
    artifact = compiled["stages"].get(stage)
    if artifact is None or stage not in GRAPH_STAGES:
        raise ValueError(f"stage {stage!r} has no graph view")
    nodes = stage_nodes(artifact)
    tree = ModuleTree(nodes)
    expanded = set(expand) & set(tree.groups) if expand is not None else tree.expansion(collapse)
    items = tree.visible(expanded)
    shown = set(items)
    kernels = kernels_by_node(compiled, stage, nodes)
    for node_id, found in list(kernels.items()):  # a group's kernels: its members'
        for gid in tree.chain[node_id]:
            kernels[gid] = sorted({*kernels.get(gid, []), *found})
    rows = [_item(tree, item, kernels) for item in items]
    edges = tree.edges(expanded)
    widths = {row["id"]: box_width(row.get("label") or [row["name"], row.get("target") or ""])
              for row in rows}
    done = layout(items, edges, widths, _clusters(tree, expanded, shown))
    for row in rows:
        (x, y), (w, h) = done.positions[row["id"]], done.sizes[row["id"]]
        row.update(x=round(x, 1), y=round(y, 1), w=round(w, 1), h=round(h, 1))
    index = {item: i for i, item in enumerate(items)}
    return {
        "stage": stage, "compile_id": compiled["id"], "engine": done.engine,
        "total_nodes": len(nodes), "module_depth": max((g.depth for g in tree.groups.values()), default=0),
        "groups_total": len(tree.groups), "expanded": sorted(expanded),
        "nodes": rows,
        "edges": [[index[a], index[b], done.routes.get((a, b))] for a, b in edges],
        "boxes": [{"id": gid, "label": _group_title(tree, gid), "depth": tree.groups[gid].depth,
                   "box": [round(v, 1) for v in box]} for gid, box in done.boxes.items()],
        "hidden": [{"id": n, "name": tree.nodes[n]["name"], "op": tree.nodes[n]["op"],
                    "target": tree.nodes[n]["target"], "chain": tree.chain[n]}
                   for n in tree.nodes if n not in shown],
        "kernels": kernel_table(result, compiled),
    }
