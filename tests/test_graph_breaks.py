"""Graph breaks as PyTorch states them: the full reason, PyTorch's graph-break id and link, and
the compile the code after each break resumed in, also after a recompile."""

from __future__ import annotations

import os

import pytest

from compiler_core import Options
from compiler_core.report.result import build_result
from compiler_core.wire import read_records

HERE = os.path.dirname(os.path.abspath(__file__))
RECOMPILED_BREAK = '''import torch


def f(x):
    y = torch.sin(x) * 2
    print("break")
    return torch.cos(y) + 1


cf = torch.compile(f)
cf(torch.randn(8))
cf(torch.randn(8, 4))  # a new rank: f recompiles (0/1), breaks again, and so does its resume
'''


def test_a_break_keeps_pytorchs_full_reason_id_and_link():
    records = read_records(os.path.join(HERE, "data", "print_graph_break.records.jsonl"))
    (brk,) = build_result(records, "/work/main/compiler_core/gallery/01_print_graph_break.py",
                          strict=True)["graph_breaks"]
    assert brk["gb_code"] == "GB0059" and brk["url"].endswith("/gb/gb0059.html")
    assert brk["gb_type"] == "Failed to trace builtin operator"
    assert brk["full_reason"].count("Hint:") == 3 and "Developer debug context" in brk["full_reason"]
    assert "Graph break in user code at" not in brk["full_reason"]


@pytest.fixture(scope="module")
def recompiled(worker):
    return worker.run(RECOMPILED_BREAK, Options(device="cpu", measure=False))


def test_each_break_resumes_in_the_compile_that_ran_after_it(recompiled):
    assert [c["id"] for c in recompiled["compiles"]] == ["0/0", "1/0", "0/1", "1/1"]
    assert [(b["compile_id"], b["line"], b["resumes_in"]) for b in recompiled["graph_breaks"]] == [
        ("0/0", 6, "1/0"), ("0/1", 6, "1/1")]
