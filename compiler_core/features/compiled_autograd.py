"""Stage `compiled_autograd_graph`: the backward graph compiled autograd traced when the script
ran backward (`torch._dynamo.config.compiled_autograd = True`), as PyTorch's structured trace
logs it. Its compile id is `!N` (the N-th graph compiled autograd traced); Dynamo then compiles
that graph as a frame of its own, `!N/frame_id/frame_compile_id`, with the usual stages.

`!N` has no frame; its `user_line` is the line whose backward() traced it, which PyTorch logs
with Dynamo's compile of the graph (that compile starts inside the same backward call). The frame
of that compile is the graph module's generated `forward`, qualified by its class here
(`CompiledAutograd0.forward`, the class the graph's text declares)."""

from __future__ import annotations

import re

from .spec import Feature, Part, payload_stage, traced

CLASS = re.compile(r"class (\w+)\(")  # the traced graph's first line

SPECS = (payload_stage("compiled_autograd_graph", "Compiled autograd graph",
                       "Compiled autograd graph (the whole backward, FX)",
                       "compiled_autograd_graph"),)


def link_traced_graphs(run) -> None:
    """Each traced graph's `user_line`, that of the first compile of it which names one; the
    `forward` those compiles run, qualified by the graph's class."""
    for traced_graph in (c for c in run.compiles if "compiled_autograd_graph" in c["stages"]):
        of_it = [c for c in run.compiles if str(c.get("id")).startswith(f"{traced_graph['id']}/")]
        traced_graph["user_line"] = traced_graph.get("user_line") or next(
            (c["user_line"] for c in of_it if c.get("user_line")), None)
        module = CLASS.match(traced_graph["stages"]["compiled_autograd_graph"]["text"])
        for compiled in of_it:
            if module and compiled["frame"].get("name") == "forward":
                compiled["frame"]["qualname"] = f"{module[1]}.forward"


FEATURE = Feature("compiled_autograd", records=(traced("compiled_autograd_graph"),),
                  stages=SPECS, run_parts=(Part(None, link_traced_graphs,
                                                name="link_traced_graphs"),))
