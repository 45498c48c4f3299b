"""Nothing goes missing silently (issue 40, items 7 and 10).

- A compiled function called with a view (`f(x[1:])`, `f(x.t())`) gets its prims view: PyTorch's
  meta converter failed to fake a view input under TorchRefsMode ("Expected meta != nullptr"), so
  the view is traced with the mode entered after the inputs are faked.
- A view that PyTorch cannot trace says why: its `stage_errors` entry names the compile and the
  stage, with a reason in words beside PyTorch's own error (what the pane shows in its place).
- A training step whose forward saves nothing for the backward gets a real `saved_activations`
  (nothing saved), not an error.
- `cudagraphs` is null for a run that did not use CUDA graphs (Inductor's scheduler logs its graph
  partitions in every GPU compile, CUDA graphs on or off); a skip names its compile and function,
  a recording is a CUDA graph recorded, a re-record has the user's line.
"""

from __future__ import annotations

import json
import logging
import os

import pytest
import torch

from compiler_core import Options
from compiler_core.features import STAGE_NAMES, STAGES, cudagraphs, saved
from compiler_core.report.conform import conform
from compiler_core.report.result import build_result
from stand_in_session import StandInSession

pytest_plugins = ["test_app_fixtures"]  # the headless Chromium

DATA = os.path.join(os.path.dirname(__file__), "data", "why_gpu_h200.json")

VIEW_INPUTS = """import torch

def f(x):
    return torch.sin(x) + 1

base = torch.randn(4, 3)
torch.compile(f)(base[1:])
torch.compile(lambda x: x.relu() * 2)(base.t())
"""
SAVES_NOTHING = """import torch

def f(x):
    return (x * 2).sum()

x = torch.randn(4, 3, requires_grad=True)
torch.compile(f)(x).backward()
"""


@pytest.fixture(scope="module")
def results(worker):
    options = Options(device="cpu", measure=False, views=True)
    return {name: worker.run(source, options, user_file=f"/job/{name}.py")
            for name, source in (("views", VIEW_INPUTS), ("nosave", SAVES_NOTHING))}


def _ops(text: str) -> set[str]:
    return {part.split("(")[0] for part in text.split("= torch.ops.")[1:]}


# ---------------------------------------------------------------- prims of a view input
def test_a_view_input_gets_its_prims_view(results):
    result = results["views"]
    assert result["error"] is None, result["error"]
    assert result["stage_errors"] == []
    assert [c["id"] for c in result["compiles"]] == ["0/0", "1/0"]
    for compiled, line in zip(result["compiles"], (4, 8)):
        prims = compiled["stages"]["prims"]
        ops = _ops(prims["text"])
        assert ops and all(op.startswith("prims.") for op in ops), ops
        assert line in prims["src_lines"]  # mapped to the user's line
    assert "prims.sin.default" in _ops(result["compiles"][0]["stages"]["prims"]["text"])


def _failing_graph():
    """A graph that branches on a tensor's value (`bool(x.sum())`): PyTorch's make_fx, tracing
    with fake tensors, has no value to branch on."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(bool, (graph.call_method("sum", (x,)),)))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


@pytest.fixture(scope="module")
def failed_views():
    """The records a job writes when its views fail to trace (the session's own emission)."""
    session = StandInSession("/job/x.py")
    session.graphs.append(("0/0", _failing_graph(), [torch.randn(3)]))
    session.emit_views()
    return session.records()


def test_a_view_that_cannot_be_traced_says_why_for_its_compile_and_stage(failed_views):
    result = build_result(failed_views, "/job/x.py", strict=True)
    errors = {(e["compile_id"], e["step"]): e for e in result["stage_errors"]}
    assert set(errors) == {("0/0", "core_aten"), ("0/0", "prims")}
    prims = errors[("0/0", "prims")]
    assert prims["message"].startswith("GuardOnDataDependentSymNode: ")  # PyTorch's, kept
    assert prims["reason"].startswith("PyTorch's make_fx could not re-trace this graph for the "
                                      "Prims view (torch._prims TorchRefsMode)")
    assert "depends on a tensor's value" in prims["reason"]
    assert "core_aten" not in result["compiles"][0]["stages"]


def test_a_stage_whose_reader_failed_is_named_with_why():
    """A real run's records, its guard tree's text forged into a number: the guards reader fails;
    its error names the stage it would have made, with a reason (what the pane shows)."""
    path = os.path.join(os.path.dirname(__file__), "data", "print_graph_break.records.jsonl")
    with open(path, encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh]
    guards = next(r for r in records if r["name"] == "dynamo_cpp_guards_str")
    guards["payload"] = 12345
    result = build_result(records, "/job/x.py")
    (error,) = [e for e in result["stage_errors"] if e["compile_id"] == guards["compile_id"]]
    assert error["step"] == "compiler_core.features.guards" and error["stages"] == ["guards"]
    assert error["reason"].startswith("torchbolt's reader failed on what PyTorch logged")
    assert "dynamo_graph" not in error["stages"]  # made by another reader, and there


def test_no_stage_a_feature_declares_is_dropped_by_the_schema():
    """A result holding an artifact of every declared stage, a compile's and a program's, keeps
    them all through `conform` (the schema's stage names are the registry's: a stage declared and
    not listed there used to be deleted, named only in stage_errors)."""
    path = os.path.join(os.path.dirname(__file__), "data", "print_graph_break.records.jsonl")
    with open(path, encoding="utf-8") as fh:
        result = build_result([json.loads(line) for line in fh], "/job/x.py", strict=True)

    def made(field):
        return {spec.name: {"stage": spec.name, "compile_id": None, "title": spec.title,
                            "language": spec.language, "text": "x", "src_lines": [None],
                            "sections": []} for spec in STAGES if spec.field in field}
    result["compiles"][0]["stages"] = made(("stages",))
    result["exports"] = [{"id": "export-0", "line": None, "stages": made(("exports",
                                                                          "torchscript"))}]
    conform(result)
    assert list(result["compiles"][0]["stages"]) == list(STAGE_NAMES)
    assert len(result["exports"]) == 1 and len(result["exports"][0]["stages"]) == len(
        [spec for spec in STAGES if spec.field in ("exports", "torchscript")])
    assert not [e for e in result["stage_errors"] if e["step"] == "schema"]


# ---------------------------------------------------------------- saved activations
def test_a_forward_that_saves_nothing_says_so(results):
    result = results["nosave"]
    assert result["error"] is None, result["error"]
    assert result["stage_errors"] == []
    (compiled,) = result["compiles"]
    assert compiled["saved_activations"] == {"saved": [], "recomputed": [], "saved_bytes": 0,
                                             "dropped": 0}
    # the reference: the backward graph's only input is the gradient of the output
    backward = compiled["stages"]["aot_backward"]["text"]
    inputs = [line for line in backward.split("\n")  # `name: "f32[]",  # descriptor`
              if line.split("#")[0].strip().endswith('",')]
    assert len(inputs) == 1 and "# TangentAOTInput(" in inputs[0], inputs


def test_a_forward_without_output_descriptors_is_not_read_as_saving_nothing(results):
    """A torch that prints no AOT output descriptors leaves the saved values unknown."""
    stages = results["nosave"]["compiles"][0]["stages"]
    forward = dict(stages["aot_forward"])
    forward["text"] = "\n".join(line.split("  # PlainAOTOutput")[0]
                                for line in forward["text"].split("\n"))
    with pytest.raises(ValueError, match="no AOT output descriptors"):
        saved.saved_activations({"aot_forward": forward, "aot_backward": stages["aot_backward"]})


# ---------------------------------------------------------------- CUDA graphs report fields
@pytest.fixture(scope="module")
def h200():
    with open(DATA, encoding="utf-8") as fh:
        return json.load(fh)


# Inductor's scheduler logs its graph partitions on every GPU compile (torch 2.13,
# torch/_inductor/scheduler.py `_log_graph_partitions`, lines 9159-9166 and 9194); with CUDA
# graphs off, every node is in one partition for the reason at line 8567. The values are ours.
PARTITION_LINES = (
    "Created 1 graph partitions: 0 cudagraphable, 1 non-cudagraphable",
    "  Partition 0: 1 nodes, non-cudagraphable, inputs=1, outputs=1",
    "    buf0: reason=partition includes all ops when cudagraphs is disabled, ir=ComputedBuffer",
)
SCHEDULER_LOGGER = "torch._inductor.scheduler.__cudagraphs"


def _partition_records(cudagraphs_on: bool) -> list[dict]:
    return [{"name": "cudagraph_log", "compile_id": "0/0", "t": 0.1, "payload": None,
             "meta": {"level": "DEBUG", "logger": SCHEDULER_LOGGER, "message": text,
                      "cudagraphs": cudagraphs_on}} for text in PARTITION_LINES]


def test_cudagraphs_is_null_when_the_run_did_not_use_them():
    assert build_result(_partition_records(False), "/job/x.py", strict=True)["cudagraphs"] is None
    report = build_result(_partition_records(True), "/job/x.py", strict=True)["cudagraphs"]
    assert report["partitions"][0]["text"].startswith("Created 1 graph partitions")


def test_the_handler_tags_each_line_with_whether_cuda_graphs_were_on():
    lines = _handled(lambda: [_log_partition_line(on) for on in (False, True)])
    assert [r["meta"]["cudagraphs"] for r in lines] == [False, True]


def _log_partition_line(on: bool) -> None:
    with torch._inductor.config.patch({"triton.cudagraphs": on}):
        logging.getLogger(SCHEDULER_LOGGER).debug(
            "Created %d graph partitions: %d cudagraphable, %d non-cudagraphable", 1, int(on),
            1 - int(on))


def _handled(log, follow_tree_manager: bool = False) -> list[dict]:
    """The records the real handler writes for what `log()` logs (loggers restored after); it
    follows the tree manager as it does on a machine with CUDA."""
    from compiler_core.runtime.hooks import cudagraphs as cudagraphs_hook

    session = StandInSession(__file__)
    loggers = [logging.getLogger(name) for name in cudagraphs_hook._cudagraph_logger_names()]
    saved_state = [(logger.level, logger.propagate, list(logger.handlers)) for logger in loggers]
    try:
        handler = cudagraphs_hook.record_cudagraph_log(session)
        if follow_tree_manager:
            cudagraphs_hook.follow_tree_manager(handler)
        log()
    finally:
        for logger, (level, propagate, handlers) in zip(loggers, saved_state):
            logger.setLevel(level)
            logger.propagate = propagate
            logger.handlers[:] = handlers
    return session.records()


# What `CUDAGraphTreeManager.run` reads of its manager, with a `_run` that skips CUDA graphs for a
# mutated input as `_update_non_cudagraph_managed_mutation` does (in a file of its own, as
# PyTorch's manager is: the user's line is the line of the script that called it).
MANAGER = compile("""
from torch._inductor.cudagraph_trees import CompilationMode
from torch._inductor.cudagraph_utils import log_cudagraph_skip_and_bump_counter

class Manager:
    graph = object()

    def __init__(self, compile_id):
        self.id_to_mode = {7: CompilationMode.INFERENCE}
        self.id_to_compile_id = {7: compile_id}

    def get_func_name(self, function_id):
        return "partition_0"

    def _run(self, new_inputs, function_id):
        log_cudagraph_skip_and_bump_counter(
            "skipping cudagraphs due to mutated inputs (1 instances). Found from : \\n")
""", "<manager>", "exec")


def test_a_skip_while_the_tree_manager_runs_names_its_compile_function_and_line(monkeypatch):
    from torch._guards import CompileId
    from torch._inductor import cudagraph_trees

    manager_class = cudagraph_trees.CUDAGraphTreeManager
    monkeypatch.setattr(manager_class, "run", manager_class.run)  # restored after the test
    monkeypatch.setattr(cudagraph_trees, "log_data_ptr_mismatch",
                        cudagraph_trees.log_data_ptr_mismatch)
    namespace = {}
    exec(MANAGER, namespace)
    manager = namespace["Manager"](CompileId(frame_id=0, frame_compile_id=1))
    (record,) = _handled(lambda: manager_class.run(manager, [], 7), follow_tree_manager=True)
    assert record["compile_id"] == "0/1" and record["meta"]["function"] == "partition_0"
    assert record["meta"]["line"] == _line_of("(record,) = _handled(lambda: manager_class.run(")
    report = build_result([record], __file__, strict=True)["cudagraphs"]
    (skip,) = report["skips"]
    assert (skip["compile_id"], skip["function"], skip["line"]) == ("0/1", "partition_0",
                                                                   record["meta"]["line"])


def _line_of(text: str) -> int:
    with open(__file__, encoding="utf-8") as fh:
        return next(i for i, line in enumerate(fh, 1) if text in line and "_line_of" not in line)


def test_recordings_are_the_cuda_graphs_recorded_each_with_compile_and_function(h200):
    """torch 2.11 on the H200: three CUDA graphs recorded (cuda_graph_id 0, 1, 2); a tree made
    per input size ("Recording cudagraph tree for ...") records no graph by itself."""
    report = cudagraphs.cudagraphs(h200["sizes_and_new_weight"]["records"], "/job/s.py")
    assert [(r["compile_id"], r["function"]) for r in report["recordings"]] == [
        ("0/1", "partition_0")] * 3
    assert [r["detail"].split("cuda_graph_id=")[1].split(",")[0]
            for r in report["recordings"]] == ["0", "1", "2"]
    assert "Recording cudagraph tree for symint key 8" in [m["text"] for m in report["messages"]]
    mutated = cudagraphs.cudagraphs(h200["mutated_input"]["records"], "/job/mutated_input.py")
    assert mutated["recordings"] == [] and len(mutated["skips"]) == 1  # skipped, not recorded


def test_a_rerecord_without_a_line_in_its_reason_has_the_line_of_the_call():
    """A re-record's reason names a line only where the changed input has a stack trace (a
    replaced weight has none): the line of the user's call that re-recorded stands."""
    # torch 2.13, torch/_inductor/cudagraph_trees.py line 2311, with the reason the guarded
    # `log_data_ptr_mismatch` gives (tests/data/why_gpu_h200.json)
    record = {"name": "cudagraph_log", "compile_id": None, "t": 0.7, "payload": None,
              "meta": {"level": "DEBUG", "logger": "torch._inductor.cudagraph_trees.__cudagraphs",
                       "message": "[0/1] Re-recording function=partition_0, mode=INFERENCE, "
                                  "reason=static input data pointer changed.",
                       "function": "partition_0", "line": 12, "cudagraphs": False}}
    (rerecord,) = build_result([record], "/job/s.py", strict=True)["cudagraphs"]["rerecords"]
    assert rerecord == {"compile_id": "0/1", "function": "partition_0", "mode": "INFERENCE",
                        "reason": "static input data pointer changed.", "line": 12}


# ---------------------------------------------------------------- the page, in headless Chromium
ARTIFACTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "test-artifacts")


def _pane_with(browser, tmp_path, name: str, source: str, result: dict, stage: str) -> str:
    """The first pane's text with `stage` picked, in the static report of `result` (the page's
    own code, opened from disk); a screenshot goes to test-artifacts/."""
    from compiler_core import report_html

    path = tmp_path / f"{name}.html"
    path.write_text(report_html(source, {"device": "cpu"}, result))
    context = browser.new_context(viewport={"width": 1400, "height": 800})
    page = context.new_page()
    problems = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready='1'][data-mode='report']")
    first = ".pane[data-index='0']"
    page.select_option(f"{first} .pane-stage", stage)
    menu = page.locator(f"{first} .pane-stage option:checked").inner_text()
    text = page.locator(f"{first} .pane-body").inner_text()
    os.makedirs(ARTIFACTS, exist_ok=True)
    page.screenshot(path=os.path.join(ARTIFACTS, f"missing_stage_{name}.png"))
    context.close()
    assert not problems, problems
    return f"{menu}\n{text}"


def test_the_pane_shows_why_a_view_is_missing_and_what_a_forward_saves(browser, tmp_path,
                                                                          failed_views, results):
    failed = build_result(failed_views, "/job/x.py")
    shown = _pane_with(browser, tmp_path, "failed_view", "import torch\n", failed, "prims")
    assert shown.startswith("Prims (view) (failed)\n")
    assert "Compile 0/0 has no Prims (view) stage: PyTorch's make_fx could not re-trace" in shown
    assert "depends on a tensor's value" in shown and "PyTorch's error" in shown
    shown = _pane_with(browser, tmp_path, "saves_nothing", SAVES_NOTHING, results["nosave"],
                       "aot_forward")
    assert "Saved for backward: nothing" in shown
    assert "This forward saves no tensors for the backward" in shown
