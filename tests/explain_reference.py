"""What `torch._dynamo.explain` reports for a script: the independent reference for our counts.

The script runs in this process with `torch.compile` replaced: every call of a compiled callable
is explained separately (explain resets Dynamo around itself), then run eagerly for its value;
with `dynamic=True` only the first call is, since its symbolic graph serves the later calls (the
gallery's guard-cache lesson checks they are hits: tests/test_lesson_claims.py).
"""

from __future__ import annotations

import runpy
from unittest import mock

import torch


def explain_script(path: str) -> dict:
    """{"graphs", "breaks", "break_lines"} summed over every compiled call, and the lines of
    breaks that `fullgraph=True` turns into errors (explain itself ignores fullgraph)."""
    totals = {"graphs": 0, "breaks": 0, "break_lines": [], "fullgraph_error_lines": []}

    def fake_compile(model=None, **kwargs):
        if model is None:
            return lambda fn: fake_compile(fn, **kwargs)

        explained = []

        def call(*args, **call_kwargs):
            if kwargs.get("dynamic") and explained:  # the symbolic graph serves later calls
                return model(*args, **call_kwargs)
            explained.append(True)
            explanation = torch._dynamo.explain(model)(*args, **call_kwargs)
            lines = [user[-1].lineno for reason in explanation.break_reasons
                     if (user := [f for f in reason.user_stack if f.filename == path])]
            if kwargs.get("fullgraph") and lines:
                totals["fullgraph_error_lines"] += lines
                raise RuntimeError("fullgraph=True and the code has a graph break")
            totals["graphs"] += explanation.graph_count
            totals["breaks"] += explanation.graph_break_count
            totals["break_lines"] += lines
            return model(*args, **call_kwargs)
        return call

    torch._dynamo.reset()
    with mock.patch.object(torch, "compile", fake_compile):
        runpy.run_path(path, run_name="__main__")
    torch._dynamo.reset()
    return totals
