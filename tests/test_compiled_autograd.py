"""Compiled autograd (issue 42's proof: a capability added as one feature module, one registry
line and one gallery example): the backward graph compiled autograd traced is shown per
compile, live and from a TORCH_TRACE log, as many as PyTorch's own counter says it captured."""

from __future__ import annotations

import json
import re

import pytest
from plain_trace import run_traced

from compiler_core.gallery import get_example
from compiler_core.report.trace_log import trace_result

EXAMPLE = get_example("compiled_autograd")
# The example in a plain process under TORCH_TRACE, then PyTorch's compiled autograd counters.
REFERENCE = ("import json, runpy, sys, torch; runpy.run_path(sys.argv[1], run_name='__main__'); "
             "print(json.dumps(dict(torch._dynamo.utils.counters['compiled_autograd'])))")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The plain run's captures count and the result read from its log files."""
    stdout, logs = run_traced(["-c", REFERENCE, EXAMPLE.path], tmp_path_factory.mktemp("ca"))
    return json.loads(stdout.strip().splitlines()[-1]), trace_result(logs)


def calls(text: str) -> list[str]:
    """What a graph's code calls, in order (its FX nodes' targets)."""
    return re.findall(r'^\s*\w+(?:: "[^"]*")? = ([\w.]+)\(', text, re.M)


def graphs_of(result) -> dict[str, dict]:
    return {c["id"]: c["stages"]["compiled_autograd_graph"] for c in result["compiles"]
            if "compiled_autograd_graph" in c["stages"]}


def test_each_backward_compiled_autograd_captured_is_shown_as_its_compile(gallery_results,
                                                                         reference):
    counters, _ = reference
    live = gallery_results["compiled_autograd"]
    shown = graphs_of(live)
    assert counters["captures"] >= 1 and len(shown) == counters["captures"]
    assert list(shown) == [f"!{n}" for n in range(counters["captures"])]
    for stage in shown.values():
        assert stage["text"].startswith("class CompiledAutograd")
        assert "def forward(self, inputs" in stage["text"]
        assert any(stage["src_lines"])  # its ops' lines in the script (the forward's)
    assert not [e for e in live["stage_errors"] if e["step"] == "schema"]


def test_a_log_of_the_same_script_shows_the_same_graphs(gallery_results, reference):
    """The same graph from a plain run's log: the same calls in the same order, its lines linked
    to the same lines of the script (names differ: PyTorch numbers AOT graphs and autograd
    functions per process, and the worker's warm-up compiled before the script)."""
    _, from_log = reference
    logged, shown = graphs_of(from_log), graphs_of(gallery_results["compiled_autograd"])
    assert list(logged) == list(shown)
    for cid, stage in shown.items():
        assert calls(stage["text"]) == calls(logged[cid]["text"]) and calls(stage["text"])
        assert stage["src_lines"] == logged[cid]["src_lines"]
    assert "compiled_autograd_graph" not in from_log["trace_unread"]


def test_dynamos_compile_of_that_graph_is_one_compile_with_all_its_stages(gallery_results):
    """`!0/1/0`: its trace entries and torchbolt's hook records (bytecode, views) share the id
    PyTorch gives it, so they make one compile (the trace's used to be `1/0`)."""
    compiles = {c["id"]: c for c in gallery_results["compiled_autograd"]["compiles"]}
    (compiled,) = [c for cid, c in compiles.items() if cid.startswith("!0/")]
    assert compiled["has_graph"] and compiled["frame"]["name"] == "forward"
    assert {"bytecode_transformed", "dynamo_graph", "core_aten", "prims",
            "output_code"} <= set(compiled["stages"])
    assert not [cid for cid in compiles if cid == compiled["id"].removeprefix("!0/")]


def test_the_traced_graph_names_the_line_whose_backward_traced_it(gallery_results):
    """`!0` has no frame (the page names it by its stage); its line is `loss.backward()`'s, which
    Dynamo's compile of that graph names (it starts inside the same backward call), whose frame
    is the graph module's forward."""
    compiles = gallery_results["compiled_autograd"]["compiles"]
    traced = next(c for c in compiles if c["id"] == "!0")
    (compiled,) = [c for c in compiles if c["id"].startswith("!0/")]
    line = next(n for n, text in enumerate(EXAMPLE.source.splitlines(), 1)
                if text.strip() == "loss.backward()")
    assert traced["frame"]["name"] is None
    assert traced["user_line"] == compiled["user_line"] == line
    graph_class = re.match(r"class (\w+)", traced["stages"]["compiled_autograd_graph"]["text"])[1]
    assert compiled["frame"]["qualname"] == f"{graph_class}.forward"  # not a bare `forward`
