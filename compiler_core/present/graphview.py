"""The graph view of one stage (served by the web app, `GET /api/results/KEY/graph`, and
embedded in static reports, so both draw the same layout): the items shown (nodes and collapsed module groups), the boxes of
expanded groups, edges with their routes, positions, the kernel overlays, and each node's links
to the other stages' nodes (`post`, `dynamo`: see `parsers.nodelinks`), ready to draw.

What is expanded is either given (`expand`: the exact set of group ids, as the page keeps it while
the user opens and closes groups) or chosen by `collapse`: "auto" (a readable first view, see
`ModuleTree.expansion`), "off" (every group open) or a module depth N (groups deeper than N
stay closed). Nodes hidden inside closed groups are listed under `hidden`, so that a search finds
them too.

A result may be forged (a hostile job's records, an uploaded log), so nothing in it is trusted:
malformed nodes are dropped (`dropped` counts them), a garbled kernel or timing list only loses
the kernel overlay, and a stage with no readable graph is a `MalformedResult`. A view of more
items than the `graph_nodes_laid_out` limit is refused (`GraphTooLarge`) before any layout.
"""

from __future__ import annotations

from ..limits import limit
from ..parsers.fxgraph import stage_nodes
from .graphoverlay import kernel_table, kernels_by_node
from .layout import Cluster, box_width, layout
from .modulegroups import ModuleTree
from ..parsers.names import short_name
from ..parsers.nodelinks import node_links
from ..features import GRAPH_STAGES

NODE_FIELDS = ("name", "op", "target", "shape", "dtype", "line", "module")
MAX_MODULE_DEPTH = 100  # module stacks nest groups; deeper ones are malformed (and would recurse)
MAX_NAME_CHARS = 1_000  # FX names are identifiers; `short_name`'s pattern is quadratic on huge ones


class MalformedResult(ValueError):
    """The result holds no readable graph for this view (a forged or garbled result)."""


class GraphTooLarge(ValueError):
    """The view has more items than the server lays out (the `graph_nodes_laid_out` limit)."""


def _group_title(tree: ModuleTree, gid: str) -> str:
    group = tree.groups[gid]
    return f"{group.label} · {group.cls}"


def _item(tree: ModuleTree, item: str, kernels: dict[str, list[int]], links: dict) -> dict:
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
    return {**row, **links.get(item, {})}


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


def _optional(value, kind) -> bool:
    return value is None or isinstance(value, kind)


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _stack(value) -> bool:
    """A module stack: at most MAX_MODULE_DEPTH [path, class] pairs of strings, paths named."""
    return (isinstance(value, list) and len(value) <= MAX_MODULE_DEPTH
            and all(isinstance(pair, (list, tuple)) and len(pair) == 2 and _strings(list(pair))
                    and pair[0] for pair in value))


def _well_formed(row: dict) -> bool:
    """A node row with every field of the type the view and the page read."""
    return (isinstance(row.get("id"), str) and isinstance(row.get("name"), str)
            and len(row["name"]) <= MAX_NAME_CHARS
            and isinstance(row.get("op"), str) and isinstance(row.get("graph"), str)
            and _optional(row.get("target"), str) and _optional(row.get("dtype"), str)
            and _optional(row.get("module"), str) and _optional(row.get("line"), int)
            and (row.get("shape") is None or isinstance(row["shape"], list)
                 and all(isinstance(d, (str, int)) for d in row["shape"]))
            and _strings(row.get("inputs")) and _stack(row.get("modules")))


def _readable(artifact) -> dict:
    """The parts of a stage that `stage_nodes` reads, each of the type it expects, and how many
    node rows it `dropped` for want of a name."""
    if not isinstance(artifact, dict):
        raise MalformedResult("the stage is not an object")
    nodes, text = artifact.get("nodes"), artifact.get("text")
    if nodes and not isinstance(nodes, list) or not nodes and not isinstance(text, str):
        raise MalformedResult("the stage has neither a node list nor FX text")
    named = [n for n in nodes or [] if isinstance(n, dict) and isinstance(n.get("name"), str)]
    src_lines, modules = artifact.get("src_lines"), artifact.get("modules")
    return {
        "nodes": named, "dropped": len(nodes or []) - len(named),
        "text": text if isinstance(text, str) else "",
        "src_lines": [v if isinstance(v, int) else None for v in src_lines]
        if isinstance(src_lines, list) else [],
        "modules": {k: v for k, v in modules.items() if _stack(v)}
        if isinstance(modules, dict) else {},
    }


def clean_nodes(rows: list[dict]) -> list[dict]:
    """Well-formed rows, each id once, none named as a module group (which would nest itself)."""
    rows = [row for row in rows if _well_formed(row)]
    groups = {(f"{row['graph']}:" if row["graph"] else "") + path
              for row in rows for path, _ in row["modules"]}
    seen: set[str] = set()
    kept = []
    for row in rows:
        if row["id"] not in seen and row["id"] not in groups:
            seen.add(row["id"])
            kept.append(row)
    return kept


def _overlays(compiled: dict, stage: str, nodes: list[dict], result) -> tuple[dict, dict, list]:
    """The links to the other stages' nodes, kernels per node and the kernel table. They come
    from the result's post-grad origins, kernel, call and timing lists, which a forged result
    may garble: that costs the overlay, not the graph."""
    try:
        links = node_links(compiled, stage, nodes)
        return links, kernels_by_node(compiled, stage, nodes, links), kernel_table(result, compiled)
    except (AttributeError, KeyError, IndexError, TypeError, ValueError, ZeroDivisionError):
        return {}, {}, []


def _stage_tree(compiled: dict, stage: str) -> tuple[list[dict], int, ModuleTree]:
    """The stage's well-formed nodes, how many were dropped, and their module groups."""
    stages = compiled.get("stages") if isinstance(compiled, dict) else None
    if not isinstance(stages, dict):
        raise MalformedResult("the compile has no stages")
    if stage not in GRAPH_STAGES or stages.get(stage) is None:
        raise ValueError(f"stage {stage!r} has no graph view")
    readable = _readable(stages[stage])
    found = stage_nodes(readable)
    nodes = clean_nodes(found)
    dropped = readable["dropped"] + len(found) - len(nodes)
    if dropped and not nodes:
        raise MalformedResult(f"none of the stage's {dropped:,} nodes is well-formed")
    return nodes, dropped, ModuleTree(nodes, most_top=limit("graph_nodes_laid_out"))


def _expansion(tree: ModuleTree, collapse: str | int, expand: list[str] | None) -> set[str]:
    return set(expand) & set(tree.groups) if expand is not None else tree.expansion(collapse)


def graph_expansion(compiled: dict, stage: str, collapse: str | int = "auto",
                    expand: list[str] | None = None) -> tuple[str, ...]:
    """The groups a view shows open, sorted: all that its layout depends on besides the stage
    (unknown ids in `expand` are no groups; `collapse` only chooses them). Milliseconds, no
    layout: what a cache of views is keyed by, so no two keys lay out the same view."""
    return tuple(sorted(_expansion(_stage_tree(compiled, stage)[2], collapse, expand)))


def graph_view(compiled: dict, stage: str, result: dict, collapse: str | int = "auto",
               expand: list[str] | None = None, layout_seconds: float | None = None,
               dot_most: tuple[int, str] | None = None) -> dict:
    """The view, laid out by `dot` within `layout_seconds` where its items are within
    `dot_most` (see `layout.layout`)."""
    nodes, dropped, tree = _stage_tree(compiled, stage)
    expanded = _expansion(tree, collapse, expand)
    items = tree.visible(expanded)
    if len(items) > (most := limit("graph_nodes_laid_out")):
        raise GraphTooLarge(f"this view has {len(items):,} items; the server lays out at most "
                            f"{most:,} (the graph_nodes_laid_out limit): collapse module groups")
    shown = set(items)
    links, kernels, kernel_rows = _overlays(compiled, stage, nodes, result)
    for node_id, ids in list(kernels.items()):  # a group's kernels: its members'
        for gid in tree.chain[node_id]:
            kernels[gid] = sorted({*kernels.get(gid, []), *ids})
    rows = [_item(tree, item, kernels, links) for item in items]
    edges = tree.edges(expanded)
    widths = {row["id"]: box_width(row.get("label") or [row["name"], row.get("target") or ""])
              for row in rows}
    done = layout(items, edges, widths, _clusters(tree, expanded, shown), layout_seconds,
                  dot_most)
    for row in rows:
        (x, y), (w, h) = done.positions[row["id"]], done.sizes[row["id"]]
        row.update(x=round(x, 1), y=round(y, 1), w=round(w, 1), h=round(h, 1))
    index = {item: i for i, item in enumerate(items)}
    return {
        "stage": stage, "compile_id": compiled.get("id"), "engine": done.engine,
        "layout_note": done.note, "dropped": dropped,
        "total_nodes": len(nodes), "module_depth": max((g.depth for g in tree.groups.values()), default=0),
        "groups_total": len(tree.groups), "expanded": sorted(expanded),
        "nodes": rows,
        "edges": [[index[a], index[b], done.routes.get((a, b))] for a, b in edges],
        "boxes": [{"id": gid, "label": _group_title(tree, gid), "depth": tree.groups[gid].depth,
                   "box": [round(v, 1) for v in box]} for gid, box in done.boxes.items()],
        "hidden": [{"id": n, "name": tree.nodes[n]["name"], "op": tree.nodes[n]["op"],
                    "target": tree.nodes[n].get("target"), "chain": tree.chain[n],
                    **({"kernels": kernels[n]} if kernels.get(n) else {}), **links.get(n, {})}
                   for n in tree.nodes if n not in shown],
        "kernels": kernel_rows,
    }
