"""Graph breaks as PyTorch states them: the full reason, PyTorch's graph-break id and link, and
the compile the code after each break resumed in, also after a recompile."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from compiler_core import Options
from compiler_core.features.breaks import parse_break
from compiler_core.present.static_html import report_html
from compiler_core.report.result import build_result
from compiler_core.wire import read_records

pytest_plugins = ["test_app_fixtures"]

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


# PyTorch's own count and names of a script's breaks, in a plain process: the total of
# `counters["graph_break"]` and the `gb_type` of each exception Dynamo counted there (read off
# the exception object, where PyTorch keeps it; no text is parsed).
REFERENCE = '''import json, runpy, sys

import torch
from torch._dynamo.exc import Unsupported
from torch._dynamo.utils import counters

gb_types = []
count = Unsupported.add_to_stats


def add_to_stats(self, category="unimplemented"):
    if category == "graph_break":
        gb_types.append(self.gb_type)
    count(self, category)


Unsupported.add_to_stats = add_to_stats
runpy.run_path(sys.argv[1], run_name="__main__")
print(json.dumps({"breaks": sum(counters["graph_break"].values()), "gb_types": gb_types}))
'''
AUTOGRAD_BREAK = '''import torch


class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        torch._dynamo.graph_break()  # BREAK
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


@torch.compile
def f(x):
    return Double.apply(x.sin()) + 1  # APPLY


f(torch.randn(4, requires_grad=True))
'''
LOGGED_ITEM = '''import logging

import torch

log = logging.getLogger(__name__)


@torch.compile
def f(x):
    y = x.sin()
    log.warning("sum %.3f", y.sum().item())  # LOG
    return y * 2


for step in range(3):
    f(torch.randn(4))
'''


def line_of(source: str, marker: str) -> int:
    return next(i for i, text in enumerate(source.split("\n"), 1) if f"# {marker}" in text)


def pytorch_reference(script: str, folder) -> dict:
    path, reference = folder / "script.py", folder / "reference.py"
    path.write_text(script)
    reference.write_text(REFERENCE)
    proc = subprocess.run([sys.executable, str(reference), str(path)], capture_output=True,
                          text=True, timeout=300, cwd=folder)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def autograd_break(worker, tmp_path_factory):
    return (worker.run(AUTOGRAD_BREAK, Options(device="cpu", measure=False, views=False)),
            pytorch_reference(AUTOGRAD_BREAK, tmp_path_factory.mktemp("autograd_break")))


@pytest.fixture(scope="module")
def logged_item(worker, tmp_path_factory):
    return (worker.run(LOGGED_ITEM, Options(device="cpu", measure=False, views=False)),
            pytorch_reference(LOGGED_ITEM, tmp_path_factory.mktemp("logged_item")))


def test_a_break_inside_an_autograd_function_has_pytorchs_gb_type(autograd_break):
    result, reference = autograd_break
    assert reference["gb_types"] == ["Call to `torch._dynamo.graph_break()`"] * 2
    assert [b["gb_type"] for b in result["graph_breaks"]] == reference["gb_types"]
    assert {b["line"] for b in result["graph_breaks"]} == {line_of(AUTOGRAD_BREAK, "BREAK")}
    assert "Higher Order Operator: autograd.Function" in result["graph_breaks"][0]["full_reason"]


def test_without_the_exception_the_gb_type_skips_the_higher_order_op_line(autograd_break):
    """A log may hold the reason without the traceback after it (the exception's own text):
    the name is then the line above "Explanation:", past the "Higher Order Operator: ..."
    line PyTorch inserts there."""
    result, reference = autograd_break
    brk = result["graph_breaks"][0]
    payload = (f"Graph break in user code at {result['user_file']}:{brk['line']}\n"
               f"Graph Break Reason: {brk['full_reason']}\n\nUser code traceback:\n"
               f"{brk['user_traceback']}")
    assert parse_break(payload, result["user_file"])["gb_type"] == reference["gb_types"][0]


def test_code_after_a_break_in_a_called_function_resumes_in_the_callers_resume(autograd_break):
    """f breaks at its call of Double.apply (line APPLY) while the break itself is inside
    forward: f's code after it runs in `torch_dynamo_resume_in_f_at_APPLY`, forward's in
    forward's own resume function."""
    result, _ = autograd_break
    frames = {c["id"]: c["frame"]["name"] for c in result["compiles"]}
    assert [(frames[b["compile_id"]], frames.get(b["resumes_in"]))
            for b in result["graph_breaks"]] == [
        ("f", f"torch_dynamo_resume_in_f_at_{line_of(AUTOGRAD_BREAK, 'APPLY')}"),
        ("forward", f"torch_dynamo_resume_in_forward_at_{line_of(AUTOGRAD_BREAK, 'BREAK')}")]


def test_a_break_counts_as_pytorch_counts_it_and_resumes_in_another_frame(logged_item):
    """`.item()` breaks f; its resume breaks on the logging call, once in 1/0 and again in
    1/1 (recompiled for the next value): three breaks, as `counters["graph_break"]` says."""
    result, reference = logged_item
    assert len(result["graph_breaks"]) == reference["breaks"] == 3
    assert [b["gb_type"] for b in result["graph_breaks"]] == reference["gb_types"]
    line = line_of(LOGGED_ITEM, "LOG")
    assert [(b["compile_id"], b["line"], b["resumes_in"]) for b in result["graph_breaks"]] == [
        ("0/0", line, "1/0"), ("1/0", line, "2/0"), ("1/1", line, "2/0")]


def test_the_strip_and_the_tab_show_pytorchs_count(logged_item, browser, tmp_path):
    result, reference = logged_item
    page_file = tmp_path / "report.html"
    page_file.write_text(report_html(LOGGED_ITEM, {"device": "cpu"}, result))
    page = browser.new_page()
    page.goto(page_file.as_uri())
    page.wait_for_selector("body[data-ready='1']")
    strip = page.inner_text("#summary .summary-breaks")
    tab = page.inner_text("#run [data-tab=breaks]")
    page.close()
    assert strip.startswith(f"{reference['breaks']} breaks"), strip
    assert tab == f"Graph breaks ({reference['breaks']})"
