"""Two torch versions side by side on one server (README, "Several torch versions on one server").

The gallery's "Same code, two torch versions" (17_torch_versions.py) says what differs; its
claim is checked in this interpreter's torch (test.sh runs this file in both torches). Then one
web server in this interpreter's torch, no Redis, with `--environment` naming the second torch's
virtualenv (the venv that scripts/setup.sh builds, scripts/second_torch.sh names): a local
worker in each. The same script runs in both environments: each result names the torch it ran
in, the Dynamo graphs agree and the output code differs where the versions do (torch 2.14 and
later check a compiled graph's inputs with one `assert_size_stride_grouped` call, 2.13 with one
`assert_size_stride` per input). On the page, "⇆ Both" runs the editor's code in both and diffs
the two runs pane against pane. Skipped (not failed) where the second venv is absent or holds
this torch; CI builds it ($TORCHBOLT_SECOND_TORCH_VENV names another).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from compiler_core.gallery import get_example
from test_browser import shot
from test_scaleout import ROOT, _quiet, call, call_ok, finished, free_port, wait_for

pytest_plugins = ["test_app_fixtures"]  # `browser`

QUICK = {"measure": False, "device": "cpu", "views": False}
SCRIPT = get_example("torch_versions").source
GROUPED = "assert_size_stride_grouped("


def second_venv() -> str:
    """The second torch's venv, as scripts/second_torch.sh names it."""
    return subprocess.run(["bash", "-c", ". scripts/second_torch.sh && echo \"$SECOND_TORCH_VENV\""],
                          cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def groups_input_checks(torch_version: str) -> bool:
    """torch 2.14 and later check a graph's inputs in one grouped call (the output code's
    wrapper)."""
    major, minor = (int(part) for part in torch_version.split(".")[:2])
    return (major, minor) >= (2, 14)


def torch_of(python: str) -> str:
    return subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                          capture_output=True, text=True, check=True).stdout.strip()


def environments(port: int) -> dict[str, dict]:
    """torch version -> the environment the web server lists."""
    return {env["torch"]: env for env in call(port, "GET", "/api/status")[1]["environments"]}


def wrapper_checks(output_code: str) -> dict[str, bool]:
    """Which input checks the output code's wrapper makes: one grouped call, or one per input."""
    return {"grouped": GROUPED in output_code, "each": "assert_size_stride(arg0_1" in output_code}


def test_the_gallerys_version_claim_holds_in_this_torch(gallery_results):
    result = gallery_results["torch_versions"]
    assert result["error"] is None and result["stdout"] == f"torch {torch.__version__}\n"
    grouped = groups_input_checks(torch.__version__)
    [compile_] = result["compiles"]
    assert wrapper_checks(compile_["stages"]["output_code"]["text"]) \
        == {"grouped": grouped, "each": not grouped}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """`python -m app --environment SECOND_PYTHON`: one server, a local worker in each torch."""
    venv_python = os.path.join(second_venv(), "bin", "python")
    if not os.path.exists(venv_python):
        pytest.skip(f"no second torch venv at {second_venv()} (scripts/setup.sh builds it)")
    if os.path.realpath(sys.prefix) == os.path.realpath(second_venv()):
        pytest.skip("this is the second torch: the two-version test runs from the main one")
    if torch_of(venv_python) == torch.__version__:
        pytest.skip(f"the second venv holds this torch too ({torch.__version__})")
    folder = str(tmp_path_factory.mktemp("versions"))
    web = free_port()
    # From this checkout's folder: the second venv's worker runs its engine (nothing of
    # torchbolt is installed in that shared venv).
    server = subprocess.Popen([sys.executable, "-m", "app", "--port", str(web), "--data-dir",
                               folder, "--environment", venv_python], cwd=ROOT,
                              stdout=open(f"{folder}/web.log", "w"), stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        wait_for(lambda: call_ok(web), 300, "the web server")
        wait_for(lambda: len(environments(web)) == 2, 60, "both torch environments")
        yield {"web": web, "environments": environments(web)}
    finally:
        with _quiet():
            os.killpg(server.pid, 9)
        server.wait()


def test_each_torch_runs_the_same_script_and_the_runs_differ_where_the_versions_do(fleet):
    web, envs = fleet["web"], fleet["environments"]
    second = torch_of(os.path.join(second_venv(), "bin", "python"))
    assert set(envs) == {torch.__version__, second}
    results = {}
    for version, env in envs.items():
        status, job = call(web, "POST", "/api/compile",
                           {"source": SCRIPT, "options": QUICK, "environment": env["id"]})
        assert status == 202, job
        results[version] = finished(web, job["handle"], timeout=180)["result"]
    graphs, codes = {}, {}
    for version, result in results.items():
        assert result["error"] is None and result["environment"]["torch"] == version
        [compile_] = result["compiles"]
        graphs[version] = compile_["stages"]["dynamo_graph"]["text"]
        codes[version] = compile_["stages"]["output_code"]["text"]
        grouped = groups_input_checks(version)
        assert wrapper_checks(codes[version]) == {"grouped": grouped, "each": not grouped}, version
    assert len(set(graphs.values())) == 1  # the same Dynamo graph in both torches
    assert len(set(codes.values())) == 2


def test_the_page_runs_the_code_in_both_and_diffs_pane_against_pane(fleet, browser):
    web, envs = fleet["web"], fleet["environments"]
    older, newer = sorted(envs, key=lambda v: [int(p) for p in v.split("+")[0].split(".")])
    page = browser.new_page(viewport={"width": 1600, "height": 900})
    problems = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.set_default_timeout(30_000)
    try:
        page.goto(f"http://127.0.0.1:{web}/")
        page.wait_for_selector("body[data-ready]")
        page.select_option("#environment", envs[older]["id"])
        page.click(".cm-content")
        page.keyboard.press("Control+A")
        page.keyboard.insert_text(SCRIPT)
        page.click("#compare-environments")
        page.wait_for_selector("body[data-compare]", timeout=240_000)
        page.wait_for_selector("#run[data-status=done]", timeout=240_000)

        compile_menus = [page.locator(f".pane[data-index='{i}'] .pane-compile") for i in (0, 1)]
        assert [menu.input_value() for menu in compile_menus] == ["0/0", "B 0/0"]
        assert f"torch {newer}" in compile_menus[1].get_attribute("title")
        page.select_option(".pane[data-index='0'] .pane-stage", "output_code")  # pane 2 follows
        assert page.locator(".pane[data-index='1'] .pane-stage").input_value() == "output_code"
        page.wait_for_selector(".pane[data-index='1'][data-stage=output_code] .cm-line")
        new = ".pane[data-index='1'] .cm-line.tb-diff-new"  # scrolled to the first change
        page.wait_for_selector(new)
        assert [line.split(" = ")[0] for line in page.locator(new).all_inner_texts()] \
            == ["assert_size_stride_grouped"]  # the wrapper's import of the grouped check
        old = page.locator(".pane[data-index='0'] .cm-line.tb-diff-old").all_inner_texts()
        assert [line.split("(")[0].strip() for line in old] == ["assert_size_stride"] * 2, old
        # ... and the grouped call itself, off screen in the second pane: two changes a side
        assert page.locator(".pane .pane-diff-info").all_inner_texts() == ["2 changed"] * 2
        shot(page, "compare_environments")

        page.select_option(".pane[data-index='0'] .pane-stage", "dynamo_graph")
        page.wait_for_selector(".pane[data-index='1'][data-stage=dynamo_graph] .cm-line")
        assert page.locator(".pane[data-index='1'] .pane-diff-info").inner_text() == "0 changed"
    finally:
        page.close()
    assert not problems
