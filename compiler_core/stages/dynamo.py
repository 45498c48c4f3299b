"""Stage `dynamo_graph`: the FX graph Dynamo captured (Torch IR), as code and as a node table."""

from __future__ import annotations

from .common import artifact, fx_src_lines, last_user_line

STAGES = ("dynamo_graph",)


def _tensor_meta(value) -> tuple[list | None, str | None]:
    """Shape and dtype of a node's example value (a FakeTensor; tuples show their first item)."""
    if isinstance(value, (tuple, list)) and value:
        value = value[0]
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    return ([str(d) for d in shape] if shape is not None else None,
            str(dtype).removeprefix("torch.") if dtype is not None else None)


def node_table(gm, user_file: str) -> list[dict]:
    """One row per FX node: name, op, target, shape, dtype, user line, module path."""
    rows = []
    for node in gm.graph.nodes:
        shape, dtype = _tensor_meta(node.meta.get("example_value"))
        module_stack = node.meta.get("nn_module_stack") or {}
        module = next(reversed(module_stack.values()), None) if module_stack else None
        rows.append({
            "name": node.name, "op": node.op,
            "target": getattr(node.target, "__name__", None) or str(node.target),
            "shape": shape, "dtype": dtype,
            "line": last_user_line(node.meta.get("stack_trace") or "", user_file),
            "module": module[0] if module else None,
            "inputs": [arg.name for arg in node.all_input_nodes],
        })
    return rows


def extract(compile_records) -> dict:
    graph = compile_records.first("dynamo_output_graph")
    if graph is None:
        return {}
    text = graph["payload"] or ""
    stage = artifact("dynamo_graph", compile_records.compile_id, "Dynamo FX graph (Torch IR)",
                     "python", text, fx_src_lines(text, compile_records.user_file))
    nodes = compile_records.first("fx_nodes")
    stage["nodes"] = nodes["meta"]["nodes"] if nodes else []
    return {"dynamo_graph": stage}
