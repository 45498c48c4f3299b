"""The "why" views on real torch (CPU): Inductor's fusion decisions from the scheduler's own
fusion log, and what AOTAutograd's partitioner saved for the backward or left to recompute."""

from __future__ import annotations

import logging
import math
import time

import pytest
from torch._inductor.scheduler import WhyNoFuse

from compiler_core import Options, report_html
from compiler_core.report.result import build_result
from compiler_core.features.saved import saved_names
from compiler_core.runtime.hooks import fusion as fusion_hook
from stand_in_session import StandInSession

pytest_plugins = ["test_app_fixtures"]

# h fuses with its sum (both read h); cos(y) and its sum over dim 0 share no data, PyTorch says.
FUSION = """import torch


def f(x, y):
    h = x.sin()
    s = h.sum(dim=1, keepdim=True)
    a = y.cos()
    b = a.sum(0)
    return h / s, a, b


torch.compile(f)(torch.randn(8, 32), torch.randn(8, 32))
"""
# The backward of cos(sin(y)) needs sin(y): the min-cut partitioner saves y (the mm) and
# recomputes the cheap sin in the backward.
TRAINING = """import torch

w = torch.nn.Parameter(torch.randn(16, 16))


def step(x):
    y = x @ w
    return y.sin().cos().sum()


torch.compile(step)(torch.randn(8, 16)).backward()
"""
STAGES_ONLY = Options(device="cpu", measure=False, views=False)


def line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.split("\n"), 1) if text in line)


@pytest.fixture(scope="module")
def fusion_result(worker):
    return worker.run(FUSION, STAGES_ONLY, user_file="fusion.py")


@pytest.fixture(scope="module")
def training_result(worker):
    return worker.run(TRAINING, STAGES_ONLY, user_file="training.py")


def test_fusion_names_what_fused_and_why_the_rest_did_not(fusion_result):
    compiled = fusion_result["compiles"][0]
    fusion, kernel_names = compiled["fusion"], {k["name"] for k in compiled["kernels"]}
    fused = [d for d in fusion["decisions"] if d["fused"]]
    refused = [d for d in fusion["decisions"] if not d["fused"]]
    sin, total = line_of(FUSION, "x.sin()"), line_of(FUSION, "h.sum(")
    cos, column_sum = line_of(FUSION, "y.cos()"), line_of(FUSION, "a.sum(0)")
    fusing = next(d for d in fused if {sin, total} <= set(d["lines"]))
    assert fusing["reason"] == f"fusing {fusing['nodes'][0]} with {fusing['nodes'][1]}"
    assert fusing["kernel"] in kernel_names and "sin" in fusing["origins"][0]
    refusal = next(d for d in refused if {cos, column_sum} <= set(d["lines"]))
    assert refusal["reason"] == "no shared data"  # WhyNoFuse in torch/_inductor/choices.py
    assert refusal["kernel"] is None and set(refusal["kernels"]) <= kernel_names
    assert fusion["rounds"]["inference"] >= 1 and fusion["dropped"] == 0


def test_fusion_log_stays_out_of_the_users_stderr(fusion_result):
    assert "cannot fuse" not in fusion_result["stderr"]
    assert "fusion" not in fusion_result["stderr"]


def test_saved_values_are_the_backward_graphs_inputs_with_their_sizes(training_result):
    compiled = training_result["compiles"][0]
    saved, backward = compiled["saved_activations"], compiled["stages"]["aot_backward"]["text"]
    assert [v["name"] for v in saved["saved"]] == ["mm", "permute"]
    for value in saved["saved"]:  # each is a backward input of the same type
        assert f'{value["name"]}: "f32[{", ".join(value["shape"])}]' in backward
        assert value["bytes"] == math.prod(map(int, value["shape"])) * 4  # float32
    mm = saved["saved"][0]
    assert mm == {"name": "mm", "op": "aten.mm.default", "input": False, "shape": ["8", "16"],
                  "dtype": "float32", "bytes": 512, "lines": [line_of(TRAINING, "x @ w")]}
    assert saved["saved_bytes"] == sum(v["bytes"] for v in saved["saved"])


def test_the_backward_recomputes_the_cheap_sin(training_result):
    saved = training_result["compiles"][0]["saved_activations"]
    sin = next(v for v in saved["recomputed"] if v["name"] == "sin")
    assert sin["op"] == "aten.sin.default" and sin["lines"] == [line_of(TRAINING, "y.sin()")]
    assert "sin" not in {v["name"] for v in saved["saved"]}


def test_inference_compile_has_no_saved_activations(fusion_result):
    assert fusion_result["compiles"][0]["saved_activations"] is None


class _Node:
    def __init__(self, name):
        self.name = name

    def get_name(self):
        return self.name


def _why_no_fuse(first: str, second: str, reason: str) -> logging.LogRecord:
    why = WhyNoFuse(_Node(first), _Node(second))
    why.reason, why.args = reason, ()
    return logging.LogRecord(fusion_hook.FUSION_LOGGER, logging.DEBUG, __file__, 0, why, None,
                             None)


def test_fusion_log_is_capped_per_graph_and_repeats_count_once():
    session = StandInSession()
    handler = fusion_hook.FusionLog(session)
    for i in range(fusion_hook.DECISIONS_PER_GRAPH + 5):
        handler.emit(_why_no_fuse(f"op{i}", f"op{i + 1}", "no shared data"))
    handler.emit(_why_no_fuse("op0", "op1", "no shared data"))  # the reorder round's repeat
    end = logging.LogRecord(fusion_hook.IR_LOGGERS["ir_post_fusion"], logging.INFO,
                            __file__, 0, "AFTER FUSION", None, None)
    handler.emit(end)
    (record,) = session.records()
    assert record["name"] == "fusion_log"
    assert len(record["meta"]["decisions"]) == fusion_hook.DECISIONS_PER_GRAPH
    assert record["meta"]["dropped"] == 5
    assert record["meta"]["decisions"][0] == {"nodes": ["op0", "op1"], "fused": False,
                                              "reason": "no shared data"}


def test_malformed_records_cost_only_their_part():
    """Records come from the job: a forged fusion log or AOT graph must not break the result."""
    records = [
        {"name": "fusion_log", "compile_id": "0/0", "t": 0, "payload": None,
         "meta": {"rounds": "x", "dropped": -3,
                  "decisions": [5, {"nodes": "op0"}, {"nodes": ["op0", 3], "fused": "yes",
                                                      "reason": 7}]}},
        {"name": "aot_forward_graph", "compile_id": "0/0", "t": 0, "meta": {},
         "payload": "def forward(self, x):\n    return (x,)\n"},
        {"name": "aot_backward_graph", "compile_id": "0/0", "t": 0, "meta": {},
         "payload": "def forward(self, t):\n    return (t,)\n"},
    ]
    result = build_result(records, "main.py")
    compiled = result["compiles"][0]
    assert compiled["fusion"]["decisions"] == [
        {"graph": "graph 0", "nodes": ["op0", "3"], "fused": False, "reason": "7", "lines": [],
         "origins": [[], []], "kernels": [None, None], "kernel": None}]
    assert compiled["fusion"]["rounds"] == {"graph 0": 0} and compiled["fusion"]["dropped"] == 0
    assert compiled["saved_activations"] is None
    assert any(e["step"] == "saved_activations" for e in result["stage_errors"])


def test_saved_names_read_hostile_text_in_linear_time():
    """In this thread's CPU seconds (0.06 s for the newlines, 1.3 s of wall time at load 10; the
    regex before took 95 s)."""
    assert saved_names("    mm,  # SavedForBackwardsAOTOutput(idx=0)\n    x,  # Plain") == ["mm"]
    for text in ("a,  # SavedForBackwardsAOTOutput(" * 50_000, "\n" * 500_000,
                 " " * 500_000 + "#" + " SavedForBackwardsAOTOutput(" * 20_000):
        started = time.thread_time()
        saved_names(text)
        assert time.thread_time() - started < 0.5


def test_page_shows_fusions_per_kernel_and_the_saved_values(training_result, fusion_result,
                                                            browser, tmp_path):
    """The static report of each run, at 1280x720: the kernels pane says what fused, the AOT
    pane lists the saved and recomputed values."""
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    problems = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    for name, source, result in (("fusion", FUSION, fusion_result),
                                 ("training", TRAINING, training_result)):
        path = tmp_path / f"{name}.html"
        path.write_text(report_html(source, {}, result))
        page.goto(path.as_uri())
        page.wait_for_selector("body[data-ready]")
        page.select_option(".pane[data-index='0'] .pane-stage", "kernels")
        page.select_option(".pane[data-index='1'] .pane-stage", "aot_forward"
                           if name == "training" else "output_code")
        kernels = page.inner_text(".pane[data-index='0'] .kernel-list")
        if name == "fusion":
            assert "fused op0 (" in kernels and "no shared data" in kernels
        else:
            saved = page.inner_text(".pane[data-index='1'] .saved-list")
            assert "Saved for backward: 2 values, 1.0 KiB; 1 op recomputed" in saved
            assert "Recomputed by the backward instead of saved" in saved and "aten.sin" in saved
    page.close()
    assert not problems
