"""Hierarchical collapse of an FX graph by `nn.Module` scope, as Google's Model Explorer does.

Each node's module stack (outermost first, from the engine's node table) places it in nested
groups, one per module call. A view of the graph is the set of groups that are expanded: a node
is shown as itself when every group around it is expanded, else as the outermost collapsed group
around it. Group ids are the module paths (`L['self'].mlp.0`), prefixed with the graph's label
(`backward:`) when a stage holds several graphs, so that forward and backward stay apart.

A graph with more top-level items than a view may lay out (no module stacks, as in a log's AOT
and post-grad graphs: PyTorch prints none) is cut into runs of `SEGMENT` consecutive items
(fewer under a low limit), each a group (`nodes 1-1000`), so that a graph of any size has a
first view and each run opens alone.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

AUTO_VISIBLE = 60  # "auto" expands groups while the view stays at most this many items
SEGMENT = 1000  # top-level items per run of a graph too large to show whole


@dataclass
class Group:
    id: str
    path: str  # the module path as PyTorch names it
    cls: str  # the module's class name
    parent: str | None
    depth: int  # 1 = a module called by the compiled function itself
    children: list[str] = field(default_factory=list)  # groups and nodes, in graph order
    size: int = 0  # nodes inside, at any depth

    @property
    def label(self) -> str:
        """The path as the user wrote it: `mlp.0` for `L['self'].mlp.0`."""
        return self.path.split("L['self'].", 1)[-1] if self.path != "L['self']" else "self"


class ModuleTree:
    """The groups of one graph's nodes (rows of `fxgraph.stage_nodes`)."""

    def __init__(self, nodes: list[dict], most_top: int | None = None):
        """`most_top`: past this many top-level items, they are cut into runs (`_segment`)."""
        self.nodes = {node["id"]: node for node in nodes}
        self.groups: dict[str, Group] = {}
        self.chain: dict[str, list[str]] = {}  # node id -> its group ids, outermost first
        self.top: list[str] = []  # groups and nodes outside any module, in graph order
        for node in nodes:
            self._place(node)
        if most_top is not None and len(self.top) > most_top:
            self._segment(max(1, min(SEGMENT, most_top // 2)))

    def _segment(self, size: int) -> None:
        """Put the top-level items, each graph's apart, in runs of `size` (one run open and the
        others closed still fit the view): a group each, one level above every module group."""
        runs: list[tuple[str, list[str]]] = []  # (graph label, items)
        for item in self.top:
            graph = self._graph_of(item)
            if runs and runs[-1][0] == graph and len(runs[-1][1]) < size:
                runs[-1][1].append(item)
            else:
                runs.append((graph, [item]))
        for group in self.groups.values():
            group.depth += 1
        self.top, counted, run_of = [], {}, {}
        for graph, items in runs:
            first = counted.get(graph, 0) + 1
            counted[graph] = first + len(items) - 1
            path = f"nodes {first}-{counted[graph]}"
            gid = f"{graph}:{path}" if graph else path
            self.groups[gid] = Group(gid, path, "in graph order", None, 1, items,
                                     sum(self.groups[i].size if i in self.groups else 1
                                         for i in items))
            self.top.append(gid)
            for item in items:
                run_of[item] = gid
                if item in self.groups:
                    self.groups[item].parent = gid
        for node_id, chain in self.chain.items():
            self.chain[node_id] = [run_of[chain[0] if chain else node_id], *chain]

    def _graph_of(self, item: str) -> str:
        if item in self.groups:
            member = self.groups[item]
            while member.children and member.children[0] in self.groups:
                member = self.groups[member.children[0]]
            item = member.children[0]
        return self.nodes[item].get("graph") or ""

    def _place(self, node: dict) -> None:
        prefix = f"{node['graph']}:" if node.get("graph") else ""
        chain, parent = [], None
        for path, cls in node.get("modules") or []:
            gid = prefix + path
            if gid not in self.groups:
                depth = len(chain) + 1
                self.groups[gid] = Group(gid, path, cls, parent, depth)
                (self.groups[parent].children if parent else self.top).append(gid)
            self.groups[gid].size += 1
            chain.append(gid)
            parent = gid
        self.chain[node["id"]] = chain
        (self.groups[parent].children if parent else self.top).append(node["id"])

    def shown_as(self, node_id: str, expanded: set[str]) -> str:
        """The item that stands for a node: its outermost collapsed group, else itself."""
        return next((g for g in self.chain[node_id] if g not in expanded), node_id)

    def visible(self, expanded: set[str]) -> list[str]:
        """Items shown (nodes and collapsed groups), in graph order."""
        out: list[str] = []

        def walk(items):
            for item in items:
                if item in self.groups and item in expanded:
                    walk(self.groups[item].children)
                else:
                    out.append(item)
        walk(self.top)
        return out

    def open_groups(self, expanded: set[str]) -> list[str]:
        """Expanded groups whose parents are expanded too: the boxes drawn around members."""
        return [g for g in self.groups if g in expanded
                and all(a in expanded for a in self._ancestors(g))]

    def _ancestors(self, gid: str) -> list[str]:
        out, parent = [], self.groups[gid].parent
        while parent:
            out.append(parent)
            parent = self.groups[parent].parent
        return out

    def expansion(self, collapse: str | int) -> set[str]:
        """The groups expanded for "off" (all), a depth N (groups above depth N), or "auto"
        (breadth first, biggest first, while the view stays within AUTO_VISIBLE items)."""
        if collapse == "off":
            return set(self.groups)
        if isinstance(collapse, int):
            return {g for g, group in self.groups.items() if group.depth < collapse}
        expanded: set[str] = set()
        count = len(self.top)
        by_depth = defaultdict(list)
        for gid, group in self.groups.items():
            by_depth[group.depth].append(gid)
        for depth in sorted(by_depth):
            for gid in sorted(by_depth[depth], key=lambda g: -self.groups[g].size):
                group = self.groups[gid]
                if group.parent and group.parent not in expanded:
                    continue
                grown = count + len(group.children) - 1
                if grown <= AUTO_VISIBLE:
                    expanded.add(gid)
                    count = grown
        return expanded

    def edges(self, expanded: set[str]) -> list[tuple[str, str]]:
        """Edges between shown items (an input outside a group enters the group), no repeats."""
        seen: dict[tuple[str, str], None] = {}
        for node in self.nodes.values():
            target = self.shown_as(node["id"], expanded)
            for source_id in node["inputs"]:
                if source_id in self.nodes:
                    source = self.shown_as(source_id, expanded)
                    if source != target:
                        seen[(source, target)] = None
        return list(seen)
