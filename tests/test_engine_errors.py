"""Bad input never hangs or kills the caller: each case ends with a clear error at the user's line,
within its limit, and the worker keeps serving the next job."""

from __future__ import annotations

import time

import pytest
import torch

from compiler_core import Options

CASES = {
    # name: (source, expected error type, expected line, options)
    "syntax_error": ("import torch\nx = (1,\n", "SyntaxError", 2, {}),
    "user_exception": ("import torch\nf = torch.compile(lambda x: x + 1)\nf(torch.randn(2))\n"
                       "raise ValueError('boom')\n", "ValueError", 4, {}),
    "fullgraph_break": ("import torch\n@torch.compile(fullgraph=True)\ndef f(x):\n"
                        "    x = x + 1\n    print('hi')\n    return x\nf(torch.randn(2))\n",
                        "Unsupported", 5, {}),
    "sys_exit": ("import sys\nprint('before')\nsys.exit(3)\n", "SystemExit", 3, {}),
    "os_exit": ("import os\nos._exit(4)\n", "Exited", None, {}),
    "segfault": ("import ctypes\n\nctypes.string_at(0)\n", "Crash", 3, {}),
    "infinite_loop": ("x = 0\nwhile True:\n    x += 1\n", "Timeout", None, {"timeout": 3}),
    "output_flood": ("while True:\n    print('x' * 10000)\n", "OutputLimit", 2, {}),
    "memory_blowup": ("import torch\nkeep = []\nwhile True:\n    keep.append(torch.ones(10**8))\n",
                      "MemoryLimit", 4, {"memory_mb": 1500}),
    "no_compile": ("import torch\nprint(torch.ones(2))\n", "NoCompile", None, {}),
    "no_gpu": ("import torch\n", "DeviceUnavailable", None, {"device": "cuda"}),
}


@pytest.mark.parametrize("name", CASES)
def test_bad_input_gives_a_clear_error(worker, name):
    source, kind, line, options = CASES[name]
    if name == "no_gpu" and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    options = Options(**{"device": "cpu", **options})
    started = time.monotonic()
    result = worker.run(source, options)
    elapsed = time.monotonic() - started
    error = result["error"]
    assert error is not None and error["type"] == kind, error
    if line is not None:
        assert error["line"] == line, error
    assert error["message"].strip()
    assert elapsed < options.timeout + 10


def test_timeout_names_the_running_line(worker):
    result = worker.run("x = 0\nwhile True:\n    x += 1\n", Options(device="cpu", timeout=2))
    assert result["error"]["line"] in (2, 3)
    assert "2 s limit" in result["error"]["message"]


def test_output_is_capped_with_a_visible_mark(worker):
    result = worker.run("import torch\nf = torch.compile(lambda x: x * 2)\nf(torch.ones(2))\n"
                        "for i in range(20000):\n    print('line', i)\n",
                        Options(device="cpu", output_limit=1000))
    assert result["error"] is None
    assert len(result["stdout"]) < 1200 and "output truncated" in result["stdout"]


def test_the_stages_before_a_crash_are_kept(worker):
    source = ("import ctypes, torch\nf = torch.compile(lambda x: x.sin() + 1)\n"
              "f(torch.randn(4))\nctypes.string_at(0)\n")
    result = worker.run(source, Options(device="cpu"))
    assert result["error"]["type"] == "Crash" and not result["finished"]
    assert result["compiles"] and "output_code" in result["compiles"][0]["stages"]


def test_a_compiled_callable_never_called_gets_a_note(worker):
    result = worker.run("import torch\nf = torch.compile(lambda x: x + 1)\n", Options(device="cpu"))
    assert result["error"] is None and result["compiles"] == []
    assert any("never called" in note for note in result["notes"])


def test_worker_serves_after_every_bad_input(worker):
    result = worker.run("import torch\nf = torch.compile(lambda x: x + 1)\nprint(f(torch.ones(1)))\n",
                        Options(device="cpu"))
    assert result["error"] is None and "tensor([2.])" in result["stdout"]


def test_jobs_in_standby_interpreters_give_the_same_results(monkeypatch):
    """The GPU machines' path: each job runs in a fresh interpreter that warmed up ahead of it
    (a fork cannot inherit CUDA state). Forced here with TORCHBOLT_FRESH_PROCESS=1."""
    from compiler_core import Worker
    monkeypatch.setenv("TORCHBOLT_FRESH_PROCESS", "1")
    fresh = Worker(standbys=1).start()  # one: each CPU warm-up costs a compile here
    try:
        fresh.wait_ready()
        assert len(fresh._standbys) == 1  # the first job's process warms up from the start
        result = fresh.run("import torch\nf = torch.compile(lambda x: x.sin() + 1)\n"
                           "print(f(torch.zeros(2)))\nraise KeyError('k')\n", Options(device="cpu"))
        # The next job's interpreter may still be warming up: its time limit starts after that.
        stuck = fresh.run("import time\nwhile True:\n    time.sleep(0.01)\n",
                          Options(device="cpu", timeout=2))
    finally:
        fresh.close()
    assert result["stdout"] == "tensor([1., 1.])\n"
    assert result["error"]["type"] == "KeyError" and result["error"]["line"] == 4
    assert "output_code" in result["compiles"][0]["stages"]
    assert stuck["error"]["type"] == "Timeout" and stuck["error"]["line"] == 3
