"""Stages `aot_forward`, `aot_backward`, `aot_joint`, `aot_inference`: AOTAutograd ATen graphs."""

from __future__ import annotations

from .spec import Feature, payload_stage, traced

# A training compile's graphs show what the partitioner saved for the backward beside them; a
# pane set to the forward shows an inference compile's graph, and the other way round.
SPECS = tuple(payload_stage(f"aot_{part}", label, f"AOTAutograd {title}", f"aot_{part}_graph",
                            **more)
              for part, label, title, more in (
                  ("joint", "AOT joint graph", "joint graph (ATen)", {"panel": "saved"}),
                  ("forward", "AOT forward (ATen)", "forward (ATen)",
                   {"panel": "saved", "counterpart": "aot_inference"}),
                  ("backward", "AOT backward (ATen)", "backward (ATen)", {"panel": "saved"}),
                  ("inference", "AOT inference (ATen)", "inference (ATen)",
                   {"counterpart": "aot_forward"})))

FEATURE = Feature("aot", records=tuple(traced(spec.records[0]) for spec in SPECS), stages=SPECS)
