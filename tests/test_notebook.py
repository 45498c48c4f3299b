"""The notebook extension (issue 27): a real notebook executed by a real Jupyter kernel
(nbclient, ipykernel) loads `%load_ext torchbolt` and runs `%%torchbolt` cells through the
engine; the saved notebook's report opens in Chromium with no network request."""

from __future__ import annotations

import html
import json
import os
import re

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

pytest_plugins = ["test_app_fixtures"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BREAK_CELL = """%%torchbolt --no-measure --no-views
import torch

def f(x):
    y = torch.sin(x) * 2
    print("between the two graphs")
    return torch.cos(y)

torch.compile(f)(torch.ones(4))
"""
SRCDOC = re.compile(r'srcdoc="([^"]*)"')
BOOT = re.compile(r'<script type="application/json" id="boot">(.*?)</script>', re.S)


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    """The executed notebook (also saved to disk) and its folder."""
    folder = tmp_path_factory.mktemp("notebook")
    nb = new_notebook(cells=[
        new_code_cell("%load_ext torchbolt"),
        new_code_cell(BREAK_CELL),
        new_code_cell("%%torchbolt --no-measure --no-views\nimport torch\nprint(weights)\n"),
        new_code_cell("%torchbolt report explored.html"),
    ])
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute()
    nbformat.write(nb, str(folder / "explore.ipynb"))
    return nb, folder


def outputs(cell, mime: str) -> list[str]:
    return [o["data"][mime] for o in cell["outputs"] if mime in o.get("data", {})]


def report_of(cell) -> dict:
    """The result inside the cell's report: iframe srcdoc -> the page's boot JSON."""
    (frame,) = outputs(cell, "text/html")[-1:]
    document = html.unescape(SRCDOC.search(frame)[1])
    return json.loads(BOOT.search(document)[1])["share"]["result"]


def test_a_cell_with_a_graph_break_shows_its_graphs_and_the_break(notebook):
    nb, _ = notebook
    cell = nb.cells[1]
    plain = outputs(cell, "text/plain")
    assert "done" in plain[0]  # the progress line, updated in place to its end
    assert plain[-1].startswith("2 compiles, 1 graph breaks")  # the summary a terminal shows
    result = report_of(cell)
    assert [c["id"] for c in result["compiles"]] == ["0/0", "1/0"]
    assert "torch.sin" in result["compiles"][0]["stages"]["dynamo_graph"]["text"]
    assert "torch.cos" in result["compiles"][1]["stages"]["dynamo_graph"]["text"]
    (brk,) = result["graph_breaks"]
    assert brk["line"] == 5 and brk["gb_code"] == "GB0059"  # the cell's own line
    assert result["stdout"] == "between the two graphs\n"


def test_a_name_from_the_notebook_is_explained(notebook):
    nb, _ = notebook
    result = report_of(nb.cells[2])
    assert result["error"]["type"] == "NameError" and result["error"]["line"] == 2
    assert "'weights'" in result["error"]["message"]
    assert "fresh process" in result["error"]["message"]


def test_the_last_report_is_written_to_a_file(notebook):
    nb, folder = notebook
    assert "wrote explored.html" in "".join(outputs(nb.cells[3], "text/plain"))
    written = (folder / "explored.html").read_text()
    assert "print(weights)" in written and "NameError" in written  # the last cell's run


def test_the_saved_notebooks_report_renders_offline(notebook, browser):
    _, folder = notebook
    saved = nbformat.read(str(folder / "explore.ipynb"), as_version=4)
    (frame,) = outputs(saved.cells[1], "text/html")[-1:]
    page_file = folder / "output.html"
    page_file.write_text(f"<!doctype html><meta charset=\"utf-8\"><body>{frame}</body>")
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    loads: list[str] = []
    page.on("request", lambda r: loads.append(r.url[:60]))
    page.goto(page_file.as_uri())
    report = page.frame_locator("iframe")
    report.locator("body[data-ready='1'][data-mode='report']").wait_for()
    assert "torch.sin" in report.locator(".pane[data-index='0'] .cm-content").inner_text()
    os.makedirs(os.path.join(ROOT, "test-artifacts"), exist_ok=True)
    page.screenshot(path=os.path.join(ROOT, "test-artifacts", "notebook_output.png"))
    context.close()
    assert all(url.startswith(("file:", "data:", "about:")) for url in loads), loads


def test_a_plain_ipython_terminal_gets_a_text_summary(capsys):
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    try:
        shell.extension_manager.load_extension("torchbolt")
        shell.run_cell(BREAK_CELL)
    finally:
        shell.extension_manager.unload_extension("torchbolt")  # its worker stops
        InteractiveShell.clear_instance()
    printed = capsys.readouterr().out
    assert "2 compiles, 1 graph breaks" in printed and "graph break at line 5" in printed
    assert "<iframe" not in printed  # the HTML stays for frontends that show it
