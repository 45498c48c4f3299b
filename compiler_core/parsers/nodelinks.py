"""Which nodes of the other graph stages a graph node is, or came from (pure): the links that let
the page select a node in one graph and mark what it became in the others, and back.

Every link is PyTorch's own data:
- post-grad node -> Dynamo nodes: Inductor's provenance tracking (`postToPre` of the
  `inductor_provenance_tracking_node_mappings` artifact, walked from each node's
  `meta["from_node"]`). An op node it names nothing for takes the Dynamo nodes of the nodes with
  its autograd `seq_nr` (the forward op it was traced for; AOTAutograd gives a backward node its
  forward op's number; captured by `runtime.capture.PostGradModules`), an input those of the node
  of its name in another graph of the compile (the partitioner names a backward input after the
  forward value it saves: the backward's `relu` is the forward's). Torch 2.13 leaves a lazily
  compiled backward's mapping empty, so the backward needs both.
- AOT node -> post-grad node: the same FX node. Inductor's post-grad passes rewrite the AOT graph
  in place, keeping names; a name the post-grad graph lacks was removed or replaced by them.
- kernel -> post-grad nodes: each kernel's `nodes` (`stages.kernels`).
Core ATen and prims are views re-traced by torchbolt, not what Inductor ran: no links.
"""

from __future__ import annotations

from .fxgraph import fx_nodes

# The post-grad graphs (by their output module's label) each AOT stage's nodes live on in.
AOT_GRAPHS = {"aot_forward": ("forward",), "aot_backward": ("backward",),
              "aot_inference": ("inference",), "aot_joint": ("forward", "backward")}


def _table(value, wanted) -> dict:
    """A job's table (name -> value), keeping the entries of the type wanted: it may be forged."""
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and wanted(v)}


def _names(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def post_grad_origins(labels: list[str], post_to_pre: list, seq_nrs: list) -> dict[str, list[str]]:
    """`label:name` of each post-grad node -> the Dynamo nodes it came from, for the graphs of
    one compile (`labels[i]`, its mapping `post_to_pre[i]` and `seq_nrs[i]`: node -> seq_nr,
    None for an input)."""
    post_to_pre = [_table(mapping, _names) for mapping in post_to_pre]
    seq_nrs = [_table(seqs, lambda v: v is None or type(v) is int and v >= 0) for seqs in seq_nrs]
    origins = {f"{label}:{name}": list(pre) for label, mapping in zip(labels, post_to_pre)
               for name, pre in mapping.items() if pre}
    by_name: dict[str, list[str]] = {}
    for key, pre in origins.items():
        by_name.setdefault(key.split(":", 1)[1], []).extend(pre)
    by_seq: dict[int, list[str]] = {}
    for label, seqs in zip(labels, seq_nrs):
        for name, seq in seqs.items():
            if seq is not None:
                by_seq.setdefault(seq, []).extend(origins.get(f"{label}:{name}", []))
    for label, seqs in zip(labels, seq_nrs):
        for name, seq in seqs.items():
            key = f"{label}:{name}"
            found = by_name.get(name) if seq is None else by_seq.get(seq)
            if key not in origins and found:
                origins[key] = list(dict.fromkeys(found))
    return origins


def _key(node: dict, labels: list[str]) -> str:
    """`label:name` of a post-grad graph's node (its rows name no graph when it has one)."""
    return f"{node['graph'] or (labels[0] if labels else '')}:{node['name']}"


def node_links(compiled: dict, stage: str, nodes: list[dict]) -> dict[str, dict]:
    """Node id -> {"post": `label:name` of the post-grad nodes it is (or, for a Dynamo node,
    became), "dynamo": the Dynamo nodes it came from}; nodes without either are left out."""
    post_grad = (compiled.get("stages") or {}).get("post_grad_graph") or {}
    origins = post_grad.get("origins") or {}
    labels = post_grad.get("graph_labels") or [  # a result stored before labels: its one graph's
        kernel.get("graph", "") for kernel in compiled.get("kernels") or []][:1]
    if stage == "dynamo_graph":
        became: dict[str, list[str]] = {}
        for key, pre in origins.items():
            for name in pre:
                became.setdefault(name, []).append(key)
        return {node["id"]: {"post": became.get(node["name"], []), "dynamo": [node["name"]]}
                for node in nodes}
    if stage == "post_grad_graph":
        keys = {node["id"]: [_key(node, labels)] for node in nodes}
    elif stage in AOT_GRAPHS and post_grad.get("text"):
        present = {_key(node, labels)  # its parsed rows: their module stacks are not needed
                   for node in fx_nodes(post_grad["text"], post_grad.get("src_lines") or [])}
        keys = {node["id"]: [key for label in AOT_GRAPHS[stage]
                             if (key := f"{label}:{node['name']}") in present] for node in nodes}
    else:
        return {}
    out = {}
    for node_id, post in keys.items():
        dynamo = list(dict.fromkeys(name for key in post for name in origins.get(key, [])))
        if post or dynamo:
            out[node_id] = {"post": post, "dynamo": dynamo}
    return out
