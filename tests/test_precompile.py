"""`torch.compiler.precompile` (issue 43): the standalone source it generates is a stage, and a
script whose only compile is a precompile shows that compile (it was reported as NoCompile).

torch 2.15 makes `torch.compiler.precompile` a module (`capture(...)` writes the source to a
file), 2.14 a function returning it, and 2.13 has neither: the script below uses what the
running torch has, and test.sh runs this file again in the second torch. The reference is the
same script in a plain process (no torchbolt) with the one Inductor setting capture makes
(provenance tracking, whose handles Inductor writes into the code as comments): the source it
wrote is the stage's text.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from compiler_core import Options
from compiler_core.report.result import build_result

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


PLAIN = ("import runpy, torch._inductor.config as config; "
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
    """The source the same script writes in a plain process."""
    folder = tmp_path_factory.mktemp("plain")
    (folder / "script.py").write_text(SCRIPT)
    proc = subprocess.run([sys.executable, "-c", PLAIN], cwd=folder, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return (folder / "block_precompiled.py").read_text()


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
    assert stage["text"] == reference


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
