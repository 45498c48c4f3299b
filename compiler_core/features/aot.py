"""Stages `aot_forward`, `aot_backward`, `aot_joint`, `aot_inference`: AOTAutograd ATen graphs."""

from __future__ import annotations

from .spec import Feature, payload_stage, traced

SPECS = tuple(payload_stage(f"aot_{part}", label, f"AOTAutograd {title}", f"aot_{part}_graph")
              for part, label, title in (
                  ("joint", "AOT joint graph", "joint graph (ATen)"),
                  ("forward", "AOT forward (ATen)", "forward (ATen)"),
                  ("backward", "AOT backward (ATen)", "backward (ATen)"),
                  ("inference", "AOT inference (ATen)", "inference (ATen)")))

FEATURE = Feature("aot", records=tuple(traced(spec.records[0]) for spec in SPECS), stages=SPECS)
