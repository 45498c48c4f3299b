"""The CLI contract other tools rely on: progress on stderr, JSON always, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from compiler_core.supervisor import sandbox
from compiler_core.supervisor.buildcache import script_key

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_cli(tmp_path, source: str, *flags: str, cache_home) -> tuple[subprocess.CompletedProcess,
                                                                      dict]:
    """The CLI on `source` in `tmp_path`, its build cache under `cache_home` (not the user's
    own; the `cli_cache_home` fixture where no fresh build is asserted)."""
    script = tmp_path / "script.py"
    script.write_text(source)
    out = tmp_path / "out.json"
    proc = subprocess.run([sys.executable, "-m", "compiler_core", "run", str(script),
                           "--json", str(out), "--device", "cpu", *flags],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "XDG_CACHE_HOME": str(cache_home)})
    return proc, json.loads(out.read_text())


def test_cli_runs_a_script_and_streams_progress(tmp_path, cli_cache_home):
    proc, result = run_cli(tmp_path, "import torch\nf = torch.compile(lambda x: x.cos() * 2)\n"
                                     "print(f(torch.ones(3)).shape)\n", "--backend", "aot_eager",
                                     "--no-measure", cache_home=cli_cache_home)
    assert proc.returncode == 0, proc.stderr
    assert "0/0 dynamo_graph" in proc.stderr and "0/0 aot_inference" in proc.stderr
    assert "tracing the Core ATen and prims views ..." in proc.stderr  # a long step says so
    assert result["stdout"] == "torch.Size([3])\n"
    assert result["options"]["backend"] == "aot_eager" and result["options"]["measure"] is False
    assert "output_code" not in result["compiles"][0]["stages"]  # aot_eager runs no Inductor


def test_cli_compiles_with_inductor_in_a_process_that_never_warmed_up(tmp_path, cli_cache_home):
    """The CLI's one job pays its own first compile, C++ toolchain included, as a plain
    `python script.py` does: no warm-up compile before it once the user's cache holds the kept
    precompiled header (sandboxed, the zygote of the cache's first run warms up to build it)."""
    proc, result = run_cli(tmp_path, "import torch\nf = torch.compile(lambda x: x.sin() * 2)\n"
                                     "print(f(torch.ones(3)).sum().item() > 0)\n",
                           "--no-measure", "--no-views", cache_home=cli_cache_home)
    assert proc.returncode == 0, proc.stderr
    assert result["error"] is None and result["stdout"] == "True\n"
    assert "cpp_fused" in result["compiles"][0]["stages"]["output_code"]["text"]


def test_cli_reports_a_user_error_in_one_line(tmp_path, cli_cache_home):
    proc, result = run_cli(tmp_path, "import torch\n\nundefined_name + 1\n",
                           cache_home=cli_cache_home)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "error: NameError (line 3): name 'undefined_name' is not defined")
    assert result["error"]["line"] == 3


def test_cli_rejects_a_missing_script(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "compiler_core", "run", str(tmp_path / "no.py")],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "No such file" in proc.stderr


@pytest.mark.parametrize("argv,named", [(["run", "--help"], "usage: torchbolt run"),
                                        (["run"], "torchbolt run: error"),
                                        (["serve", "--help"], "usage: torchbolt serve")])
def test_the_torchbolt_command_names_itself(argv, named):
    """Help and argument errors name the command the user typed, not `python -m ...`."""
    proc = subprocess.run([sys.executable, "torchbolt.py", *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert named in proc.stdout + proc.stderr and "python -m" not in proc.stdout + proc.stderr


def test_the_build_cache_is_reused_and_hides_no_stage(tmp_path, cli_cache_home):
    """A second run reuses the kernels the first built (same source, same cache entry) and still
    shows every stage: only the caches that skip code generation stay off. `--fresh-cache`
    builds afresh and leaves the cache alone. Sandboxed, the precompiled C++ header is kept in
    the cache too (else each run built it again in its private /tmp), built by the zygote and
    not writable by jobs, and reused by `--fresh-cache`, as PyTorch's own fresh cache keeps it."""
    source = "import torch\nf = torch.compile(lambda x: x.sin() * 2)\nprint(f(torch.ones(3)))\n"
    beside = cli_cache_home / "torchbolt" / "venv-of-mine" / "bin"  # e.g. the second torch
    beside.mkdir(parents=True)
    first_proc, first = run_cli(tmp_path, source, "--no-measure", "--no-views",
                                cache_home=cli_cache_home)
    assert beside.stat().st_uid == os.getuid()  # not handed to the sandbox's user
    build = cli_cache_home / "torchbolt" / "build"
    cache = build / "scripts" / script_key(source) / "inductor-cache"  # this script's own
    built = {p: p.stat().st_mtime for p in cache.rglob("*.so")}
    assert first_proc.returncode == 0 and built, first_proc.stderr
    second_proc, second = run_cli(tmp_path, source, "--no-measure", "--no-views",
                                  cache_home=cli_cache_home)
    assert second_proc.returncode == 0, second_proc.stderr
    # reused, none built again (when the first run's job came warm from the zygote that built
    # the header, the second adds the vector-ISA probes that warm-up had run)
    assert {p: p.stat().st_mtime for p in built} == built
    assert set(second["compiles"][0]["stages"]) == set(first["compiles"][0]["stages"])
    assert {"output_code", "ir_post_fusion", "post_grad_graph"} <= set(second["compiles"][0]["stages"])
    headers = sorted((build / "header").rglob("*.gch"))
    assert headers or not sandbox.check().ok
    before = {p: p.stat().st_mtime for p in (*cache.rglob("*"), *headers)}
    fresh_proc, fresh = run_cli(tmp_path, source, "--no-measure", "--no-views", "--fresh-cache",
                                cache_home=cli_cache_home)
    assert fresh_proc.returncode == 0 and "output_code" in fresh["compiles"][0]["stages"]
    assert {p: p.stat().st_mtime for p in (*cache.rglob("*"), *headers)} == before
