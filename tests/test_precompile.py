"""`torch.compiler.precompile` (issue 43): the standalone source it generates is a stage, and a
script whose only compile is a precompile shows that compile (it was reported as NoCompile).

torch 2.15 makes `torch.compiler.precompile` a module (`capture(...)` writes the source to a
file), 2.14 a function returning it, and 2.13 has neither: the script below uses what the
running torch has, and test.sh runs this file again in the second torch. The reference is the
same script in a plain process (no torchbolt) under TORCH_TRACE, with the one Inductor setting
capture makes (provenance tracking, whose handles Inductor writes into the code as comments): the
source it wrote is the stage's text, and its log, imported, shows the same compile.
"""

from __future__ import annotations

import pytest
import torch
from plain_trace import traced_folder

from compiler_core import Options
from compiler_core.report.result import build_result
from compiler_core.report.trace_log import trace_result

HAS_API = hasattr(torch.compiler, "precompile")
SCRIPT = '''import torch


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.relu(self.lin(x)) * 2


def run(model, x):
    return model(x)


torch.manual_seed(0)
model, x = Block(), torch.randn(2, 8)
precompile = torch.compiler.precompile
if hasattr(precompile, "capture"):  # torch 2.15: a module that writes the source
    with precompile.capture(run, artifact_path="block_precompiled.py",
                            cache_path="block_precompiled.cache") as cap:
        y = cap(model, x)
else:  # torch 2.14: a function that returns it
    source, cache = precompile(run, model, x)
    with open("block_precompiled.py", "w") as fh:
        fh.write(source)
    y = precompile.load(source, cache)(model, x)
print(torch.allclose(y, run(model, x)))
'''


FORWARD_LINE = 10  # Block.forward's return
# Stages only torchbolt's hooks record: the API's source (PyTorch logs it nowhere), the loop IR.
HOOKS_ONLY = {"precompile_source", "ir_pre_fusion", "ir_post_fusion"}
PLAIN = ("import os, runpy, sys, torch._inductor.config as config; os.chdir(sys.argv[1]); "
         "config.trace.provenance_tracking_level = 1; runpy.run_path('script.py', "
         "run_name='__main__')")


@pytest.fixture(scope="module")
def result(worker, tmp_path_factory):
    path = tmp_path_factory.mktemp("precompile") / "precompile_script.py"
    path.write_text(SCRIPT)
    return worker.run(SCRIPT, Options(device="cpu", measure=False, views=False),
                      user_file=str(path))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The source the same script writes in a plain process, and that process's log imported
    (Inductor's caches on, in a folder of their own: capture packs their artifact)."""
    folder = tmp_path_factory.mktemp("plain")
    (folder / "script.py").write_text(SCRIPT)
    _, trace = traced_folder(["-c", PLAIN, str(folder)], folder, inductor_cache=folder / "cache")
    logs = {p.name: p.read_text() for p in trace.iterdir() if p.suffix == ".log"}
    return (folder / "block_precompiled.py").read_text(), trace_result(logs)


@pytest.mark.skipif(not HAS_API, reason=f"torch {torch.__version__} has no precompile")
def test_a_precompile_only_script_shows_its_compile(result):
    assert result["error"] is None, result["error"]
    assert result["stdout"] == "True\n" and result["stage_errors"] == []
    [compiled] = result["compiles"]
    assert compiled["id"] == "precompile-0"
    # what the lowering logged: the graph AOTAutograd made, Inductor's code
    assert {"aot_inference", "post_grad_graph", "output_code", "precompile_source"} \
        <= set(compiled["stages"])
    assert [k["name"] for k in compiled["kernels"]]


@pytest.mark.skipif(not HAS_API, reason=f"torch {torch.__version__} has no precompile")
def test_the_stage_is_the_source_a_plain_process_writes(result, reference):
    [compiled] = result["compiles"]
    stage = compiled["stages"]["precompile_source"]
    assert stage["language"] == "python" and "BACKEND" in stage["text"]
    assert stage["text"] == reference[0]


@pytest.mark.skipif(not HAS_API, reason=f"torch {torch.__version__} has no precompile")
def test_its_imported_log_shows_the_same_compile_and_stages(result, reference):
    """PyTorch logs the lowering with no compile id (the import dropped it as in no compile):
    from the stack it logs with each entry, the log has the live run's precompile-0, with its
    stages but those torchbolt's hooks record (the source, which PyTorch logs nowhere)."""
    [live], [logged] = result["compiles"], reference[1]["compiles"]
    assert logged["id"] == live["id"] == "precompile-0"
    assert set(logged["stages"]) == set(live["stages"]) - HOOKS_ONLY
    assert [k["name"] for k in logged["kernels"]] == [k["name"] for k in live["kernels"]]
    # the script named by the precompile's call (the log has no Dynamo frame): stages map to
    # the same lines (their texts differ: the script's path, the kernels' node lists)
    assert reference[1]["user_file"].endswith("script.py")
    assert {name: lines_of(stage) for name, stage in logged["stages"].items()} \
        == {name: lines_of(stage) for name, stage in live["stages"].items()
            if name not in HOOKS_ONLY} != {name: set() for name in logged["stages"]}


@pytest.mark.skipif(not HAS_API, reason=f"torch {torch.__version__} has no precompile")
def test_the_output_module_it_inlines_links_to_the_script_as_the_output_code_does(result):
    """The source names no line of the script (no `# File:` comments), but the output module it
    inlines does through Inductor's provenance: those lines map where the output code's map."""
    stages = result["compiles"][0]["stages"]
    code, source = stages["output_code"], stages["precompile_source"]
    assert FORWARD_LINE in {line for _, line, _ in mapped(code)}
    assert mapped(source) == mapped(code)


def lines_of(stage: dict) -> set[int]:
    return {line for line in stage["src_lines"] if line}


def mapped(stage: dict) -> list[tuple]:
    """(text, user line, kernel line) of each line of a stage that maps to the script."""
    keys = stage.get("kernel_src") or [None] * len(stage["src_lines"])
    return [(text, line, key) for text, line, key
            in zip(stage["text"].split("\n"), stage["src_lines"], keys) if line]


@pytest.mark.skipif(HAS_API, reason=f"torch {torch.__version__} has torch.compiler.precompile")
def test_without_the_api_the_stage_says_why(result):
    assert result["error"]["type"] == "AttributeError"
    [why] = [e for e in result["stage_errors"] if e["step"] == "precompile_source"]
    assert why["stages"] == ["precompile_source"]
    assert f"torch {torch.__version__} has no torch.compiler.precompile" in why["reason"]


def test_a_capture_call_on_torch_2_14_says_it_came_in_2_15():
    records = [
        {"name": "environment", "compile_id": None, "t": 0, "payload": None,
         "meta": {"torch": "2.14.1"}},
        {"name": "error", "compile_id": None, "t": 1, "payload": None,
         "meta": {"type": "AttributeError", "line": 3, "traceback": "",
                  "message": "'_PrecompileApi' object has no attribute 'capture'"}}]
    result = build_result(records, "/x.py", strict=True)
    [why] = result["stage_errors"]
    assert why["stage"] == "precompile_source" and "came in torch 2.15" in why["reason"]
