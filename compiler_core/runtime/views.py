"""What the job derives from each Dynamo graph as a backend receives it (needs torch).

`node_table`: one row per FX node, for the node table of the `dynamo_graph` stage.
`trace_views`: the Core ATen and prims views (`features/decomp.py` turns them into stages).
These are *views* of the captured graph, not what Inductor executed: Inductor uses its own
decomposition table and never lowers through prims. Re-tracing uses fake tensors shaped like the
example inputs, so it costs no real compute; symbolic sizes are specialised to their hints.
"""

from __future__ import annotations

import torch

from ..parsers.common import last_user_line


def _tensor_meta(value) -> tuple[list | None, str | None]:
    """Shape and dtype of a node's example value (a FakeTensor; tuples show their first item)."""
    if isinstance(value, (tuple, list)) and value:
        value = value[0]
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    return ([str(d) for d in shape] if shape is not None else None,
            str(dtype).removeprefix("torch.") if dtype is not None else None)


def module_stack(node) -> list[list[str]]:
    """The node's `nn_module_stack`, outermost first, as [path, class name] pairs
    (`[["L['self'].mlp", "Sequential"], ["L['self'].mlp.0", "Linear"]]`). The meta's values are
    (path, class) pairs; export-style graphs hold the class as its qualified name."""
    stack = node.meta.get("nn_module_stack") or {}
    return [[str(path), getattr(cls, "__name__", None) or str(cls).rsplit(".", 1)[-1]]
            for path, cls in stack.values()]


def node_table(gm, user_file: str) -> list[dict]:
    """One row per FX node: name, op, target, shape, dtype, user line, module path and stack."""
    rows = []
    for node in gm.graph.nodes:
        shape, dtype = _tensor_meta(node.meta.get("example_value"))
        modules = module_stack(node)
        rows.append({
            "name": node.name, "op": node.op,
            "target": getattr(node.target, "__name__", None) or str(node.target),
            "shape": shape, "dtype": dtype,
            "line": last_user_line(node.meta.get("stack_trace") or "", user_file),
            "module": modules[-1][0] if modules else None, "modules": modules,
            "inputs": [arg.name for arg in node.all_input_nodes],
        })
    return rows


def root_module(gm) -> str | None:
    """The class name of the module the graph's frame called as a whole (the one whose path is
    a bare local, `L['fn']` in Dynamo's wrapper of a compiled nn.Module), else None."""
    for node in gm.graph.nodes:
        for path, module_type in (node.meta.get("nn_module_stack") or {}).values():
            if path.startswith("L[") and path.endswith("]") and "." not in path:
                return getattr(module_type, "__name__", str(module_type).rsplit(".", 1)[-1])
    return None


def _concrete(value):
    """A SymInt becomes its hint: make_fx traces this view with concrete sizes."""
    if isinstance(value, torch.SymInt):
        return value.node.hint
    return value


def _interpreted(gm):
    """gm run node by node: under preserve_node_meta, make_fx then copies each node's user stack
    trace onto the ops it traces (as AOTAutograd does), so the views link to user lines."""
    return lambda *args: torch.fx.Interpreter(gm).run(*args)


def _under_refs(gm):
    """gm run node by node under TorchRefsMode. The mode is entered inside the traced call, after
    make_fx has made its fake inputs: made under the mode, a fake of a view input (`x[1:]`,
    `x.t()`) fails in PyTorch's meta converter (`_set_creation_meta`: "Expected meta != nullptr",
    torch 2.13), since the mode turns the converter's own view call into a ref."""
    from torch._prims.context import TorchRefsMode

    def run(*args):
        with TorchRefsMode():
            return torch.fx.Interpreter(gm).run(*args)
    return run


def _retrace(gm, inputs, *, prims: bool):
    """Core ATen: make_fx with the Core ATen table. Prims: that graph again under TorchRefsMode
    (refs of ATen ops take positional arguments, which the Torch-level graph may not use)."""
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.fx.traceback import preserve_node_meta

    with preserve_node_meta():
        core = make_fx(_interpreted(gm), decomposition_table=torch._decomp.core_aten_decompositions(),
                       tracing_mode="fake")(*inputs)
        if not prims:
            return core
        return make_fx(_under_refs(core), tracing_mode="fake")(*inputs)


def _readable(traced) -> str:
    return traced.print_readable(print_output=False, include_stride=True, include_device=True)


def trace_views(gm, example_inputs) -> dict[str, str | Exception]:
    """Both views; a view that fails to trace is returned as its exception (other stages go on)."""
    from torch._guards import tracing
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    inputs = [_concrete(x) for x in example_inputs]
    views: dict[str, str | Exception] = {}
    for stage, prims in (("core_aten", False), ("prims", True)):
        try:
            # Outside Dynamo's tracing context and fake mode: the re-trace must not add
            # symbols or guards to the compile in progress.
            with tracing(None), unset_fake_temporarily():
                views[stage] = _readable(_retrace(gm, inputs, prims=prims))
        except Exception as exc:  # a view failing must not break the user's compile
            views[stage] = exc
    return views
