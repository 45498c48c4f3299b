"""Papercuts a new user hit (issue 11, item 10), each on the real app."""

from __future__ import annotations

from compiler_core import Options

TABULAR = '''import torch


def backend(gm, example_inputs):
    gm.graph.print_tabular()
    return gm.forward


torch.compile(lambda x: x.sin() + 1, backend=backend)(torch.ones(3))
'''


def test_print_tabular_works_in_a_job(worker):
    result = worker.run(TABULAR, Options(device="cpu"))
    assert result["error"] is None, result["error"]
    assert "opcode" in result["stdout"] and "call_function" in result["stdout"]
