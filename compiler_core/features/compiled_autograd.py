"""Stage `compiled_autograd_graph`: the backward graph compiled autograd traced when the script
ran backward (`torch._dynamo.config.compiled_autograd = True`), as PyTorch's structured trace
logs it. Its compile id is `!N` (the N-th graph compiled autograd traced); Dynamo then compiles
that graph as a frame of its own, `!N/frame_id/frame_compile_id`, with the usual stages."""

from __future__ import annotations

from .spec import Feature, payload_stage, traced

SPECS = (payload_stage("compiled_autograd_graph", "Compiled autograd graph",
                       "Compiled autograd graph (the whole backward, FX)",
                       "compiled_autograd_graph"),)

FEATURE = Feature("compiled_autograd", records=(traced("compiled_autograd_graph"),),
                  stages=SPECS)
