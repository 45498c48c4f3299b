"""The calls timeline says what really ran (issue 40, item 4), and each compiled callable keeps
the script's own torch.compile arguments (item 9).

The reference is the script's own output in a plain process without torchbolt: a counting
backend whose compiled function notes each run, so a call printed `graph` ran a compiled graph,
`eager` ran without one (Dynamo's cache limit, a skipped frame, a stance), `raised` raised.
"""

from __future__ import annotations

import subprocess
import sys

import jsonschema
import pytest
from test_browser import open_page, page, shot  # noqa: F401  (page is a fixture)

from compiler_core.report.conform import SCHEMA

pytest_plugins = ["test_app_fixtures"]

SCRIPT = '''import torch
import torch._dynamo

torch._dynamo.config.recompile_limit = 2
graph_runs = []


def counting(gm, example_inputs):
    def run(*args):
        graph_runs.append(1)
        return gm.forward(*args)
    return run


def call(label, compiled, *args):
    """Prints what ran: a compiled graph, no graph, or an exception."""
    before = len(graph_runs)
    try:
        compiled(*args)  # CALL
    except Exception as error:
        print(f"{label}|raised|{type(error).__name__}")
        return
    print(f"{label}|{'graph' if len(graph_runs) > before else 'eager'}")


def add(x, n):
    return x + n


def shift(x, n):
    return x - n


def no_tensors(a, b):
    return a + b


class Double(torch.nn.Module):
    def forward(self, x):
        return x * 2


add_c = torch.compile(add, backend=counting, dynamic=False)
for n, again in [(0, ""), (1, ""), (2, ""), (3, ""), (1, " again")]:
    call(f"add n={n}{again}", add_c, torch.ones(2), n)
skip_c = torch.compile(no_tensors, backend=counting)
call("no tensors", skip_c, 1, 2)
call("no tensors again", skip_c, 1, 2)
double = torch.compile(Double(), backend=counting, dynamic=False)
for size, again in [(1, ""), (2, ""), (3, ""), (1, " again")]:
    call(f"double size={size}{again}", double, torch.ones(size))
strict = torch.compile(shift, backend=counting, dynamic=False, fullgraph=True)
for n in [0, 1, 2]:
    call(f"shift n={n}", strict, torch.ones(2), n)
with torch.compiler.set_stance("force_eager"):
    call("double under force_eager", double, torch.ones(1))
torch._dynamo.reset()  # compile ids start again at 0/0
call("add after reset", add_c, torch.ones(2), 5)
'''
RAN = {"graph": {"compile", "recompile", "hit"}, "eager": {"eager"}, "raised": {"error"}}
LIMIT = {"name": "recompile_limit", "value": 2}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> list[list[str]]:
    """Each call's `label|what ran[|exception]`, as the script prints it without torchbolt."""
    path = tmp_path_factory.mktemp("truth") / "truth.py"
    path.write_text(SCRIPT)
    run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return [line.split("|") for line in run.stdout.splitlines()]


def run(compiled, source: str) -> dict:
    """The job of `source` through the API (its page is opened below), stages only."""
    job = compiled(source, device="cpu", measure=False, views=False)
    assert job["result"]["error"] is None, job["result"]["error"]
    return job


@pytest.fixture(scope="module")
def result(compiled) -> dict:
    return run(compiled, SCRIPT)["result"]


def labelled(result, reference) -> dict[str, dict]:
    assert len(result["calls"]) == len(reference)
    return {ref[0]: call for ref, call in zip(reference, result["calls"])}


def test_the_script_runs_the_same_under_torchbolt(result, reference):
    assert [line.split("|") for line in result["stdout"].splitlines()] == reference
    assert [ref[1] for ref in reference].count("eager") == 6  # the case is what it claims


def test_results_validate_against_the_schema(result, arguments_result):
    for each in (result, arguments_result):
        jsonschema.validate(each, SCHEMA)
        assert not [e for e in each["stage_errors"] if e["step"] == "schema"]


def test_each_call_is_labelled_with_what_ran(result, reference):
    for ref, call in zip(reference, result["calls"]):
        assert call["outcome"] in RAN[ref[1]], (ref, call)


def test_calls_after_the_recompile_limit_ran_eager_and_name_it(result, reference):
    calls = labelled(result, reference)
    for label in ("add n=2", "add n=3", "double size=3"):
        assert calls[label]["outcome"] == "eager", calls[label]
        assert calls[label]["eager_reason"] == "recompile_limit"
        assert calls[label]["limit"] == LIMIT
        assert calls[label]["entries"] == []
    # With fullgraph=True Dynamo raises at the limit instead of running the frame eagerly.
    assert calls["shift n=2"]["outcome"] == "error" and calls["shift n=2"]["limit"] == LIMIT
    assert calls["shift n=2"]["error"] == "FailOnRecompileLimitHit"
    # The call that hit the limit names the compile the limit stopped, which carries PyTorch's
    # explanation; a later call tried no compile.
    compiles = {c["id"]: c for c in result["compiles"]}
    for label, frame, reason in (("add n=2", "0", "Dynamo recompile limit exceeded"),
                                 ("double size=3", "2", "Dynamo recompile limit exceeded"),
                                 ("shift n=2", "3", "Hard failure due to fullgraph=True")):
        stopped = compiles[calls[label]["compile_id"]]
        assert stopped["id"] == f"{frame}/2"
        assert stopped["failure"]["reason"].startswith(reason)
    assert calls["add n=3"]["compile_id"] is None


def test_hits_name_the_entry_whose_guards_passed(result, reference):
    calls = labelled(result, reference)
    assert [(calls[f"add n={n}"]["outcome"], calls[f"add n={n}"]["compile_id"])
            for n in (0, 1)] == [("compile", "0/0"), ("recompile", "0/1")]
    again = calls["add n=1 again"]  # after the limit, but entry 0/1's guard n == 1 passes
    assert (again["outcome"], again["compile_id"], again["eager_reason"]) == ("hit", "0/1", None)
    first, last = calls["double size=1"], calls["double size=1 again"]
    assert (last["outcome"], last["compile_id"]) == ("hit", first["compile_id"])


def test_skipped_frames_and_stances_run_eager_with_their_reason(result, reference):
    calls = labelled(result, reference)
    for label in ("no tensors", "no tensors again"):
        assert (calls[label]["outcome"], calls[label]["eager_reason"]) == ("eager", "skipped")
        assert calls[label]["entries"] == []
    forced = calls["double under force_eager"]
    assert (forced["outcome"], forced["eager_reason"]) == ("eager", "dynamo_off")
    after_reset = calls["add after reset"]  # PyTorch's second 0/0 (compiler_core/compile_ids.py)
    assert (after_reset["outcome"], after_reset["compile_id"]) == ("compile", "[reset 1] 0/0")
    assert after_reset["compile_id"] in {c["id"] for c in result["compiles"]}
    graph_calls = [c for c in result["calls"] if c["outcome"] != "eager"]
    assert all(c["eager_reason"] is None for c in graph_calls)


ARGUMENTS_SCRIPT = '''import torch


def f(x):
    return x.sin() + 1


def g(x):
    return x.cos() * 2


tuned = torch.compile(f, mode="max-autotune")
plain = torch.compile(g, backend="eager", fullgraph=False)
tuned(torch.ones(4))
plain(torch.ones(4))
'''


@pytest.fixture(scope="module")
def arguments_result(compiled) -> dict:
    return run(compiled, ARGUMENTS_SCRIPT)["result"]


def test_each_compile_keeps_the_scripts_own_arguments(arguments_result):
    tuned, plain = arguments_result["compiled_callables"]
    assert tuned["arguments"] == {"mode": "max-autotune"}
    assert tuned["options"]["mode"] == "max-autotune"
    assert tuned["overrides"] == ["mode"]  # the page said "default"
    # fullgraph=False is what the page says too: stated by the script, no override
    assert plain["arguments"] == {"backend": "eager", "fullgraph": False}
    assert plain["overrides"] == ["backend"]
    compile_of = {c["callable"]: c["compile_id"] for c in arguments_result["calls"]}
    assert tuned["compile_ids"] == [compile_of[tuned["index"]]]
    assert plain["compile_ids"] == [compile_of[plain["index"]]]


def test_the_page_labels_each_call_and_the_overridden_option(page, live_server, compiled,
                                                             reference):
    open_page(page, f"{live_server}/r/{run(compiled, SCRIPT)['key']}")
    page.click("[data-tab=calls]")
    outcomes = [o.lower() for o in page.locator(".calls .outcome").all_inner_texts()]
    assert [RAN[ref[1]] >= {outcome} for ref, outcome in zip(reference, outcomes)] == [True] * 16
    why = page.locator(".calls .call.eager .call-why").all_inner_texts()
    assert why == ["recompile_limit (2) hit"] * 2 + ["frame skipped"] * 2 + [
        "recompile_limit (2) hit", "Dynamo off"]
    limit_row = page.locator(".calls .call").nth(2)
    assert "torch._dynamo.config.recompile_limit (2)" in limit_row.get_attribute("title")
    assert page.locator(".calls .call.error .call-why").inner_text() == "FailOnRecompileLimitHit"
    shot(page, "calls_eager_after_recompile_limit")

    open_page(page, f"{live_server}/r/{run(compiled, ARGUMENTS_SCRIPT)['key']}")
    tuned = page.locator(".compile-row[data-compile='0/0'] .compile-arguments").inner_text()
    assert tuned == "this compile: mode=max-autotune (script), overrides the page's default"
    assert "backend=eager (script), overrides the page's inductor" in page.locator(
        ".compile-row[data-compile='1/0'] .compile-arguments").inner_text()
    mode = page.locator("#options select[name=mode]")
    assert "overridden" in mode.get_attribute("class")
    assert "Overridden for f (line 12): mode=max-autotune" in mode.get_attribute("title")
    assert "overridden" not in (page.locator("#options select[name=dynamic]")
                                .get_attribute("class") or "")
    page.click("[data-tab=calls]")
    assert page.locator(".compiled-callables li").count() == 2
    shot(page, "compile_arguments_override_the_page")
