"""Stages `core_aten` and `prims`: the Dynamo graph re-traced with make_fx.

These are *views* of the captured graph, not what Inductor executed: Inductor uses its own
decomposition table and never lowers through prims. Re-tracing uses fake tensors shaped like the
example inputs, so it costs no real compute; symbolic sizes are specialised to their hints.
"""

from __future__ import annotations

from .common import artifact, fx_src_lines

STAGES = ("core_aten", "prims")
VIEW_NOTE = ("# View: the Dynamo graph re-traced by torchbolt with make_fx and {table}.\n"
             "# Not what Inductor executed; symbolic sizes are specialised to the example inputs.\n")


def _concrete(value):
    """A SymInt becomes its hint: make_fx traces this view with concrete sizes."""
    import torch
    if isinstance(value, torch.SymInt):
        return value.node.hint
    return value


def _interpreted(gm):
    """gm run node by node: under preserve_node_meta, make_fx then copies each node's user stack
    trace onto the ops it traces (as AOTAutograd does), so the views link to user lines."""
    import torch
    return lambda *args: torch.fx.Interpreter(gm).run(*args)


def _retrace(gm, inputs, *, prims: bool):
    """Core ATen: make_fx with the Core ATen table. Prims: that graph again under TorchRefsMode
    (refs of ATen ops take positional arguments, which the Torch-level graph may not use)."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.fx.traceback import preserve_node_meta

    with preserve_node_meta():
        core = make_fx(_interpreted(gm), decomposition_table=torch._decomp.core_aten_decompositions(),
                       tracing_mode="fake")(*inputs)
        if not prims:
            return core
        from torch._prims.context import TorchRefsMode
        with TorchRefsMode():
            return make_fx(_interpreted(core), tracing_mode="fake")(*inputs)


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


def extract(compile_records) -> dict:
    out = {}
    for stage, table in (("core_aten", "the Core ATen decomposition table"),
                         ("prims", "torch._prims TorchRefsMode")):
        record = compile_records.first(stage)
        if record is None:
            continue
        text = VIEW_NOTE.format(table=table) + (record["payload"] or "")
        title = "Core ATen (view)" if stage == "core_aten" else "Prims (view)"
        out[stage] = artifact(stage, compile_records.compile_id, title, "python", text,
                              fx_src_lines(text, compile_records.user_file))
        out[stage]["view"] = True
    return out
