"""The page in headless Chromium (Debian's /usr/bin/chromium, driven by Playwright).

Screenshots go to test-artifacts/ (look at them); figures seen in the browser go to
test-artifacts/browser_timings.json.
"""

from __future__ import annotations

import json
import os
import re

import pytest

from compiler_core.gallery import get_example

pytest_plugins = ["test_app_fixtures"]

ARTIFACTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "test-artifacts")
BREAK = get_example("print_graph_break").source
XSS_SOURCE = '''"""XSS probe </textarea><script>__xss = 1</script> "><img src=x onerror="__xss=2">"""
import torch

PAYLOAD = '</textarea><script>__xss=3</script>"><img src=x onerror="__xss=4">'
print(PAYLOAD)


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.add_module('"><img src=x onerror=__xss=5>', torch.nn.Linear(4, 4))

    def forward(self, x):
        y = getattr(self, '"><img src=x onerror=__xss=5>')(x)
        print("<script>__xss=6</script>")
        return y * len("</script><img src=x onerror=__xss=7>")


def f(x, d):
    return x * d['"><img src=x onerror=__xss=8>']


f.__code__ = f.__code__.replace(co_name="<img src=x onerror=__xss=9>")
torch.compile(M())(torch.randn(2, 4))
torch.compile(f)(torch.randn(4), {'"><img src=x onerror=__xss=8>': 2})
raise ValueError('</textarea><img src=x onerror="__xss=10">')
'''
timings: dict = {}


@pytest.fixture(scope="module", autouse=True)
def save_timings():
    yield
    os.makedirs(ARTIFACTS, exist_ok=True)
    with open(os.path.join(ARTIFACTS, "browser_timings.json"), "w") as fh:
        json.dump(timings, fh, indent=1)


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(viewport={"width": 1600, "height": 900})
    page = context.new_page()
    problems = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("console", lambda m: m.type == "error" and problems.append(f"console: {m.text}"))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.set_default_timeout(30_000)
    yield page
    context.close()
    assert not problems


def shot(page, name):
    os.makedirs(ARTIFACTS, exist_ok=True)
    page.screenshot(path=os.path.join(ARTIFACTS, f"{name}.png"))


def open_page(page, url):
    page.goto(url)
    page.wait_for_selector("body[data-ready]")


def pane(page, index):
    return f".pane[data-index='{index}']"


def run_script(page, source=None):
    """Replace the editor's text (as a paste would) and press Ctrl+Enter."""
    page.click(".cm-content")
    if source is not None:
        page.keyboard.press("Control+A")
        page.keyboard.insert_text(source)
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#run[data-status=done], #run[data-status=failed]", timeout=120_000)
    return page.evaluate("window.__tbTiming")


def gutter_line(page, marker_class):
    """The editor line number beside a lint gutter mark."""
    return page.evaluate("""(cls) => {
        const mark = document.querySelector(`#editor .cm-gutter-lint .${cls}`).getBoundingClientRect();
        const numbers = [...document.querySelectorAll('#editor .cm-lineNumbers .cm-gutterElement')];
        const row = numbers.find((el) => Math.abs(el.getBoundingClientRect().top - mark.top) < 6);
        return row ? Number(row.textContent) : null;
    }""", marker_class)


def hover_node(page, index, op):
    """Move the mouse onto the first graph node with this op; returns its hover card's text."""
    x, y = page.evaluate("""([sel, op]) => {
        const view = document.querySelector(sel + ' .pane-body').graphView;
        return view.canvas.clientPoint(view.graph.nodes.find((n) => n.op === op));
    }""", [pane(page, index), op])
    page.mouse.move(x, y)
    return page.wait_for_selector(f"{pane(page, index)} .graph-card:not([hidden])").text_content()


def test_graph_break_example_end_to_end(page, live_server):
    open_page(page, live_server + "/")
    page.click("#gallery-button")
    page.click("#gallery-menu [data-slug=print_graph_break]")
    timings["print_graph_break"] = run_script(page)
    assert page.get_attribute("#run", "data-status") == "done"

    assert gutter_line(page, "cm-lint-marker-warning") == 17
    page.hover("#editor .cm-lint-marker-warning")
    tooltip = page.wait_for_selector(".cm-tooltip-lint").inner_text()
    assert "Graph break" in tooltip and "print" in tooltip and tooltip.count("GB0059") == 1
    shot(page, "break_gutter_tooltip")

    assert page.locator(".compile-row .compile-id").all_inner_texts() == ["0/0", "1/0"]
    assert "line 17" in page.inner_text(".between.break")
    page.mouse.move(1000, 700)  # the gutter's tooltip covers the run panel's tabs
    page.click("[data-tab=breaks]")
    code = page.locator(".break-card .gb-code")
    assert code.inner_text() == "GB0059" and code.get_attribute("href").endswith("/gb0059.html")
    assert "Hint:" in page.locator(".break-card .full-reason pre").text_content()  # folded
    page.click("[data-tab=compiles]")
    census = page.locator(".compile-row .census").first.inner_text()
    assert census.startswith("ops: Dynamo graph (Torch IR) 2 (2 distinct) → "), census

    page.select_option(f"{pane(page, 0)} .pane-compile", "0/0")
    page.select_option(f"{pane(page, 0)} .pane-stage", "dynamo_graph")
    page.select_option(f"{pane(page, 1)} .pane-compile", "1/0")
    page.select_option(f"{pane(page, 1)} .pane-stage", "dynamo_graph")
    assert "torch.sin" in page.inner_text(f"{pane(page, 0)} .cm-content")
    assert "torch.cos" in page.inner_text(f"{pane(page, 1)} .cm-content")
    shot(page, "break_both_graphs_side_by_side")

    page.click(f"{pane(page, 0)} .segmented button:has-text('Graph')")
    page.wait_for_selector(f"{pane(page, 0)} .pane-body[data-ready]")
    label = hover_node(page, 0, "call_function")
    assert "op: call_function" in label and "shape: [8, 16]" in label and "source line: 12" in label
    page.fill(f"{pane(page, 0)} .graph-search", "sin")
    assert page.inner_text(f"{pane(page, 0)} .graph-count") == "1 match"
    shot(page, "break_graph_view")


def test_share_link_reloads_result_and_layout(page, live_server, compiled):
    job = compiled(BREAK)
    open_page(page, f"{live_server}/r/{job['key']}")
    assert page.text_content(".run-status").startswith("shared")
    assert "Graph break from print" in page.inner_text("#editor .cm-content")
    assert gutter_line(page, "cm-lint-marker-warning") == 17
    page.keyboard.press("Alt+Digit3")
    page.select_option(f"{pane(page, 2)} .pane-stage", "guards")
    page.keyboard.press("Alt+KeyT")
    page.keyboard.press("Alt+Equal")
    page.reload()
    page.wait_for_selector("body[data-ready]")
    assert page.locator(".pane").count() == 3
    assert page.get_attribute("html", "data-theme") == "dark"
    assert "local L['x']" in page.inner_text(f"{pane(page, 2)} .guards")
    assert page.text_content(".run-status").startswith("shared")  # loaded, not recompiled
    shot(page, "share_reload_dark_three_panes")


def test_timings_view_shows_verdict_speedup_and_figure(page, live_server, compiled):
    job = compiled(BREAK, device="cpu")
    (timing,) = job["result"]["timings"]
    open_page(page, f"{live_server}/r/{job['key']}")
    page.select_option(f"{pane(page, 1)} .pane-stage", "timings")
    page.wait_for_selector(f"{pane(page, 1)} .pane-body[data-ready]")  # figures drawn
    card = f"{pane(page, 1)} .timing-card"
    assert page.inner_text(f"{card} h3").split() == ["f(float32[8,", "16]", "cpu)", "CPU"]
    assert page.inner_text(f"{card} .verdict").startswith("✓ Same output: compiled matches eager")
    assert page.inner_text(f"{card} [data-series=warm] th").startswith("CPU, warm")
    speedup = page.inner_text(f"{card} [data-series=warm] .speedup")
    assert re.fullmatch(r"\d+\.\d\d× \(\d+\.\d\d–\d+\.\d\d×\), (faster|slower|within noise|"
                        r"can't tell \((machine busy|too few turns)\))", speedup)
    assert speedup.startswith(f"{timing['e2e']['warm']['speedup']['median']:.2f}×")
    if any(side.get("withheld") for side in timing["kernels"]["totals"].values()):
        assert "withheld" in page.inner_text(f"{card} .launches")  # profiled on a busy machine
    else:
        assert page.locator(f"{card} .timing-plot .barlayer .point").count() >= 2  # stacked bars
        assert "cpp_fused" in page.inner_text(f"{card} details[data-mode=compiled]")
    shot(page, "timings_view")


def test_error_is_shown_at_its_line(page, live_server):
    open_page(page, live_server + "/")
    source = ("import torch\n\n\ndef f(x):\n    return x.sin()\n\n\n"
              "torch.compile(f)(torch.ones(2))\nraise RuntimeError('bad thing happened')\n")
    run_script(page, source)
    assert page.get_attribute("#run", "data-status") == "failed"
    assert gutter_line(page, "cm-lint-marker-error") == 9
    assert "bad thing happened" in page.inner_text(".error-box")
    assert "line 9" in page.inner_text(".error-box")
    shot(page, "error_at_line")


def cancel_a_long_run(page, live_server):
    """Start a script that sleeps a minute, then press Escape; returns once the run ended."""
    open_page(page, live_server + "/")
    page.click(".cm-content")
    page.keyboard.press("Control+A")
    page.keyboard.insert_text("import time\n\ntime.sleep(60)\n")
    page.keyboard.press("Control+Enter")
    # The Cancel button shows once the server took the job (a busy server may first be
    # cancelling the first visit's lesson run): Escape before that has no job to cancel.
    page.wait_for_selector("#cancel:not([hidden])")
    page.keyboard.press("Escape")
    page.wait_for_selector("#run[data-status=failed]", timeout=20_000)


def test_escape_cancels_a_running_compile(page, live_server):
    cancel_a_long_run(page, live_server)
    assert "Cancelled" in page.inner_text(".error-box")


def test_user_text_never_runs_as_markup(page, live_server, compiled):
    job = compiled(XSS_SOURCE)
    assert job["result"]["error"]["type"] == "ValueError"
    open_page(page, f"{live_server}/r/{job['key']}")
    page.click("[data-tab=output]")
    page.click(".error-box .line-link")  # scrolls the editor to the error's line
    page.hover("#editor .cm-lint-marker-error")
    page.wait_for_selector(".cm-tooltip-lint")
    for tab in ("breaks", "compiles", "output"):
        page.click(f"[data-tab={tab}]")
    assert '<img src=x onerror="__xss=4">' in page.inner_text(".stdout")
    assert page.locator(".compile-row .frame", has_text="<img src=x onerror=__xss=9>").count() == 1
    page.select_option(f"{pane(page, 1)} .pane-compile", "2/0")
    page.select_option(f"{pane(page, 1)} .pane-stage", "guards")
    assert "onerror=__xss=8" in page.inner_text(f"{pane(page, 1)} .guards")
    page.select_option(f"{pane(page, 0)} .pane-compile", "0/0")
    page.select_option(f"{pane(page, 0)} .pane-stage", "dynamo_graph")
    page.click(f"{pane(page, 0)} .segmented button:has-text('Graph')")
    page.wait_for_selector(f"{pane(page, 0)} .pane-body[data-ready]")
    assert "onerror=__xss=5" in hover_node(page, 0, "call_function")
    shot(page, "xss_probe")
    assert page.evaluate("typeof __xss") == "undefined"
    assert page.locator("img").count() == 0
