"""The guard cache per call, torch.export and TorchScript beside torch.compile (issue 11, parts
2-4), on one real run of SCRIPT through the API (shared by every test here, the browser's too).
"""

from __future__ import annotations


import jsonschema
import pytest
from test_browser import open_page, page, pane, shot  # noqa: F401  (page is a fixture)

from compiler_core.report.conform import SCHEMA

pytest_plugins = ["test_app_fixtures"]

SCRIPT = '''import torch


def f(x):
    if x.sum() > 0:  # IF
        return x.sin()  # SIN
    return x.cos()  # COS


class Scale(torch.nn.Module):
    def forward(self, x):
        return x * 2  # SCALE


x = torch.linspace(-1.0, 2.0, 8)
cf = torch.compile(f)
cf(x)  # CALL compile
cf(x * 2)  # CALL hit
cf(-x)  # CALL other branch
cf(torch.linspace(-1.0, 2.0, 16))  # CALL shape change
cf(x)  # CALL dynamic entry
m = torch.compile(Scale())
m(x)  # CALL module
m(x)  # CALL module again

batch = torch.export.Dim("batch", min=2)
program = torch.export.export(Scale(), (torch.randn(4, 3),), dynamic_shapes={"x": {0: batch}},
                              strict=True)  # EXPORT
traced = torch.jit.trace(f, x)  # TRACE
scripted = torch.jit.script(f)  # SCRIPT
print(program.module()(torch.randn(5, 3)).shape, traced(-x)[0], scripted(-x)[0])
'''


def line_of(marker: str) -> int:
    return next(i for i, text in enumerate(SCRIPT.split("\n"), 1) if f"# {marker}" in text)


@pytest.fixture(scope="module")
def result(compiled):
    job = compiled(SCRIPT, device="cpu")  # measure is on: its replays must not be calls
    assert job["result"]["error"] is None, job["result"]["error"]
    return job["result"]


def test_result_validates_against_schema(result):
    jsonschema.validate(result, SCHEMA)


def test_calls_say_which_cache_entry_served_each_call(result):
    calls = [(c["name"], c["line"], c["outcome"], c["compile_id"]) for c in result["calls"]]
    assert calls == [
        ("f", line_of("CALL compile"), "compile", "0/0"),
        ("f", line_of("CALL hit"), "hit", "0/0"),
        # The own frame hits 0/0; the branch not taken before resumes in a new frame.
        ("f", line_of("CALL other branch"), "compile", "2/0"),
        ("f", line_of("CALL shape change"), "recompile", "0/1"),
        # Dynamo checks the most recently used entry first: 0/1 (dynamic size) serves size 8.
        ("f", line_of("CALL dynamic entry"), "hit", "0/1"),
        ("Scale", line_of("CALL module"), "compile", "3/0"),
        ("Scale", line_of("CALL module again"), "hit", "3/0"),
    ]
    entries = [c["entries"] for c in result["calls"]]
    assert entries[0] == ["0/0", "1/0"]  # the resume function after the break compiled too
    assert entries[2] == ["0/0", "2/0"] and entries[4] == ["0/1"]
    assert "size mismatch at index 0. expected 8, actual 16" in result["calls"][3]["reason"]
    assert result["calls"][3]["reason"].startswith("0/0: ")
    assert all(c["reason"] is None for i, c in enumerate(result["calls"]) if i != 3)
    # Every compile the calls name is a compile of the result; the export's strict (Dynamo)
    # trace is not one of them.
    ids = {c["id"] for c in result["compiles"]}
    assert {cid for c in result["calls"] for cid in c["entries"]} == ids
    assert result["timings"], "timing ran (its replays call the callables) but lists no call"


def test_export_is_captured_with_signature_and_range_constraints(result):
    (export,) = result["exports"]
    assert export["id"] == "export-0" and export["line"] == line_of("EXPORT") - 1
    text = export["stages"]["exported_program"]["text"]
    assert "Graph signature" in text and "x: USER_INPUT" in text
    assert "Range constraints: {s" in text and "VR[2, int_oo]" in text
    assert line_of("SCALE") in export["stages"]["exported_program"]["src_lines"]
    assert "torch.ops.aten.mul.Tensor" in export["stages"]["export_core_aten"]["text"]


def test_trace_bakes_the_branch_in_and_warns_script_keeps_it(result):
    trace, script = result["torchscript"]
    assert (trace["kind"], trace["line"]) == ("trace", line_of("TRACE"))
    assert (script["kind"], script["line"]) == ("script", line_of("SCRIPT"))
    # torch 2.14 also warns that jit.trace is deprecated (a FutureWarning, not from the script)
    (warning,) = [w for w in trace["warnings"] if w["category"] != "FutureWarning"]
    assert warning["category"] == "TracerWarning" and warning["line"] == line_of("IF")
    traced, scripted = trace["stages"]["torchscript_graph"], script["stages"]["torchscript_graph"]
    assert "prim::If" not in traced["text"] and "aten::sin" in traced["text"]
    assert "prim::If" in scripted["text"] and "aten::cos" in scripted["text"]
    assert {line_of("IF"), line_of("SIN"), line_of("COS")} <= set(scripted["src_lines"])
    assert "if bool(" in script["stages"]["torchscript_code"]["text"]
    assert "if " not in trace["stages"]["torchscript_code"]["text"]
    assert "TracerWarning" in result["stderr"]  # still shown to the user, as without torchbolt


def test_calls_timeline_selects_the_entry_of_a_call(page, live_server, compiled):
    job = compiled(SCRIPT, device="cpu")
    open_page(page, f"{live_server}/r/{job['key']}")
    page.click("[data-tab=calls]")
    rows = page.locator(".calls .call")
    assert rows.count() == len(job["result"]["calls"]) == 7
    assert [o.lower() for o in page.locator(".calls .outcome").all_inner_texts()] == [
        "compile", "hit", "compile", "recompile", "hit", "compile", "hit"]
    rows.nth(4).locator(".call-name").click()  # the hit served by the dynamic entry 0/1
    for index in (0, 1):
        assert page.input_value(f"{pane(page, index)} .pane-compile") == "0/1"
    assert "s77" in page.inner_text(f"{pane(page, 0)} .cm-content")  # 0/1's graph: dynamic size
    rows.nth(4).locator(".line-link").click()
    assert "# CALL dynamic entry" in page.inner_text("#editor .cm-activeLine")
    shot(page, "calls_timeline")

    page.select_option(f"{pane(page, 1)} .pane-compile", "export-0")
    assert page.input_value(f"{pane(page, 1)} .pane-stage") == "exported_program"
    assert "Range constraints" in page.inner_text(f"{pane(page, 1)} .cm-content")
    page.select_option(f"{pane(page, 1)} .pane-compile", "trace-0")
    assert "aten::sin" in page.inner_text(f"{pane(page, 1)} .cm-content")
    shot(page, "export_and_trace_in_panes")
