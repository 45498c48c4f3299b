"""Stage `compiled_autograd_graph`: the backward graph compiled autograd traced when the script
ran backward (`torch._dynamo.config.compiled_autograd = True`), as PyTorch's structured trace
logs it. Its compile id is `!N` (the N-th graph compiled autograd traced); Dynamo then compiles
that graph as a frame of its own, `!N/frame_id/frame_compile_id`, with the usual stages.

`!N` has no frame; its `user_line` is the line whose backward() traced it, which PyTorch logs
with Dynamo's compile of the graph (that compile starts inside the same backward call)."""

from __future__ import annotations

from .spec import Feature, Part, payload_stage, traced

SPECS = (payload_stage("compiled_autograd_graph", "Compiled autograd graph",
                       "Compiled autograd graph (the whole backward, FX)",
                       "compiled_autograd_graph"),)


def backward_lines(run) -> None:
    """Each traced graph's `user_line`: that of the first compile of it which names one."""
    for traced_graph in (c for c in run.compiles if "compiled_autograd_graph" in c["stages"]):
        of_it = (c.get("user_line") for c in run.compiles
                 if str(c.get("id")).startswith(f"{traced_graph['id']}/"))
        traced_graph["user_line"] = traced_graph.get("user_line") or next(filter(None, of_it),
                                                                           None)


FEATURE = Feature("compiled_autograd", records=(traced("compiled_autograd_graph"),),
                  stages=SPECS, run_parts=(Part(None, backward_lines, name="backward_lines"),))
