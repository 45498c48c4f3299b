"""Compile ids that PyTorch repeats: after `torch._dynamo.reset()` it numbers compiles again from
0/0, so a script that compiles, resets and compiles again has two compiles `0/0` (its logs call
both `[0/0]`, tlparse files both under one `[0/0]`). The result keeps them apart as `0/0` and
`[reset 1] 0/0` (compiler_core/compile_ids.py), live and from the same script's log, with as
many compiles as PyTorch's own counter says it made."""

from __future__ import annotations

import json

import pytest
from plain_trace import run_traced

from compiler_core import Options
from compiler_core.compile_ids import beside, renumbered
from compiler_core.report.trace_log import trace_result

SCRIPT = '''import torch


def f(x):
    return torch.sin(x) + 1


def g(x):
    return torch.cos(x) * 2


x = torch.randn(8)
print(torch.compile(f, backend="eager")(x).sum())
torch._dynamo.reset()
g_compiled = torch.compile(g, backend="eager")
print(g_compiled(x).sum())
print(g_compiled(torch.randn(4)).sum())
'''
# The script in a plain process under TORCH_TRACE, then PyTorch's count of the graphs it made
# (backend="eager": Dynamo's numbering is the same without Inductor's compile time).
REFERENCE = ("import json, runpy, sys, torch; runpy.run_path(sys.argv[1], run_name='__main__'); "
             "print(json.dumps(torch._dynamo.utils.counters['stats']['unique_graphs']))")
IDS = ["0/0", "[reset 1] 0/0", "[reset 1] 0/1"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The plain run's graph count and the result read from its log files."""
    folder = tmp_path_factory.mktemp("torch_trace")
    script = folder / "reset.py"
    script.write_text(SCRIPT)
    stdout, logs = run_traced(["-c", REFERENCE, str(script)], folder)
    return json.loads(stdout.strip().splitlines()[-1]), trace_result(logs)


@pytest.fixture(scope="module")
def live(worker):
    return worker.run(SCRIPT, Options(device="cpu", measure=False, views=False),
                      user_file="reset.py")


def test_a_reset_compiles_again_as_compiles_of_their_own(live, reference):
    graphs, _ = reference
    compiles = {c["id"]: c for c in live["compiles"]}
    assert list(compiles) == IDS and len(compiles) == graphs
    assert [compiles[i]["frame"]["name"] for i in IDS] == ["f", "g", "g"]
    assert "sin" in compiles["0/0"]["stages"]["dynamo_graph"]["text"]
    assert "cos" in compiles["[reset 1] 0/0"]["stages"]["dynamo_graph"]["text"]
    assert "sin" not in compiles["[reset 1] 0/0"]["stages"]["dynamo_graph"]["text"]
    assert not [e for e in live["stage_errors"] if e["step"] == "schema"]


def test_the_recompile_and_the_calls_name_the_compiles_of_their_numbering(live):
    (recompile,) = live["recompiles"]
    assert (recompile["compile_id"], recompile["previous"]) == ("[reset 1] 0/1", "[reset 1] 0/0")
    assert [(c["outcome"], c["compile_id"]) for c in live["calls"]] == [
        ("compile", "0/0"), ("compile", "[reset 1] 0/0"), ("recompile", "[reset 1] 0/1")]


def ops(compiled: dict) -> tuple[bool, bool]:
    text = compiled["stages"]["dynamo_graph"]["text"]
    return "sin" in text, "cos" in text


def test_the_scripts_log_gives_the_same_compiles(live, reference):
    _, from_log = reference
    assert [c["id"] for c in from_log["compiles"]] == IDS
    for logged, shown in zip(from_log["compiles"], live["compiles"]):
        assert ops(logged) == ops(shown)


def test_only_an_id_that_starts_again_is_marked():
    def start(cid):
        return {"name": "dynamo_start", "compile_id": cid}

    def graph(cid):
        return {"name": "dynamo_output_graph", "compile_id": cid}
    records = [start("0/0"), graph("0/0"), start("1/0"), {"name": "note", "compile_id": None},
               start("0/0"), graph("0/0"), start("0/1"), start("0/0"), graph("0/0")]
    assert [r["compile_id"] for r in renumbered(records)] == [
        "0/0", "0/0", "1/0", None, "[reset 1] 0/0", "[reset 1] 0/0", "[reset 1] 0/1",
        "[reset 2] 0/0", "[reset 2] 0/0"]
    unrepeated = [start("0/0"), start("[reset 1] 0/0"), graph("[reset 1] 0/0")]  # a job's
    assert renumbered(unrepeated) == unrepeated
    assert (beside("[reset 1] 0/1", "0/0"), beside("0/1", "0/0")) == ("[reset 1] 0/0", "0/0")
