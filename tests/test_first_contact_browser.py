"""A newcomer's first contact (issue 41 items 1, 4, 5, 6, 9), at 1280x720, in one browser
page that goes through it in order: the first visit opens lesson 1, a pasted script of one's own
runs once, and what a person sees is checked at each step (the stage shown, where it is on
screen, its words). Screenshots go to test-artifacts/first_contact_*.png.
"""

from __future__ import annotations

import json
import os
import re
from urllib.parse import unquote

import pytest

from test_browser import ARTIFACTS, open_page, pane

pytest_plugins = ["test_app_fixtures"]

# A script of our own: a graph break splits it in two frames and the second call's shape
# recompiles both (markers `graph_break` and `recompile` on the compile rows); the first graph
# is a dozen nodes deep, taller than its pane at zoom 1.
PASTED = '''import torch


def f(x):
    y = torch.sin(x) * 2
    y = torch.tanh(y - 1).exp() / 3
    y = y.abs().sqrt() + y.square()
    print("a graph break")
    return torch.cos(y) + 1


compiled = torch.compile(f)
compiled(torch.ones(8))
compiled(torch.ones(16))
'''
# Each eager and compiled call sleeps: the timings take seconds, long enough to stop them.
SLOW_TIMING = '''import time

import torch


def g(x):
    y = torch.relu(x) * 3
    time.sleep(0.3)
    return y - 1


torch.compile(g)(torch.ones(4))
'''
WIDTH, HEIGHT = 1280, 720
RUN_S = 240


@pytest.fixture(scope="module")
def visit(browser, live_server):
    """One page at 1280x720: a first visit (lesson 1 runs), then the pasted script runs once
    while the run panel's status line is recorded as it changes."""
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    page = context.new_page()
    problems, refused = [], []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("console", lambda m: m.type == "error" and not m.location.get("url", "").endswith("/events")
            and problems.append(f"console: {m.text}"))  # the refused stream below is the test's
    page.on("response", lambda r: r.status >= 400 and refused.append(f"{r.status} {r.url}"))
    page.set_default_timeout(30_000)
    open_page(page, live_server + "/")
    page.wait_for_selector("#run[data-status=done]", timeout=RUN_S * 1000)
    page.wait_for_selector("body[data-scene]")
    lesson = [page.get_attribute(pane(page, i), "data-stage") for i in (0, 1)]

    paste(page, PASTED)
    page.evaluate("""() => {
        window.__statuses = [];
        const line = document.querySelector('#run .run-status');
        const seen = () => {
            const stop = line.querySelector('.stop-run');
            window.__statuses.push({ text: line.querySelector('.status-text').textContent,
                                     stop: Boolean(stop && !stop.hidden) });
        };
        new MutationObserver(seen).observe(line, { subtree: true, childList: true, characterData: true,
                                                   attributes: true });
    }""")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#run[data-status=done]", timeout=RUN_S * 1000)
    statuses = page.evaluate("window.__statuses")
    os.makedirs(ARTIFACTS, exist_ok=True)
    unclocked = [re.sub(r"\d+\.\d+ s", "", s["text"]) for s in statuses]
    with open(os.path.join(ARTIFACTS, "first_contact_statuses.json"), "w") as fh:  # what it said, and when
        json.dump([s for i, s in enumerate(statuses) if not i or unclocked[i] != unclocked[i - 1]], fh, indent=1)
    yield {"page": page, "lesson_stages": lesson, "statuses": statuses, "problems": problems,
           "refused": refused, "server": live_server}
    context.close()
    assert not problems


def paste(page, source):
    page.click(".cm-content")
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(source)


def shot(page, name):
    os.makedirs(ARTIFACTS, exist_ok=True)
    page.screenshot(path=os.path.join(ARTIFACTS, f"first_contact_{name}.png"))


def in_view(page, selector):
    """The element's box lies inside the window, with some size."""
    box = page.locator(selector).first.bounding_box()
    return bool(box and box["width"] > 20 and box["height"] > 10 and box["x"] >= 0 and box["y"] >= 0
                and box["x"] + box["width"] <= WIDTH + 1 and box["y"] + box["height"] <= HEIGHT + 1)


def shown_stage(page, index):
    """The stage a pane shows: its menu's chosen entry, as a person reads it."""
    return page.eval_on_selector(f"{pane(page, index)} .pane-stage",
                                 "(s) => s.options[s.selectedIndex].textContent")


def pane_text(page, index):
    return page.inner_text(f"{pane(page, index)} .pane-body")


def test_a_pasted_script_shows_its_graph_and_kernels_not_the_lessons_stage(visit):
    page = visit["page"]
    assert visit["lesson_stages"] == ["torchscript_code", "torchscript_code"]  # lesson 1's scene
    assert page.is_hidden("#lesson")  # pasting other code left the lesson
    assert [shown_stage(page, 0), shown_stage(page, 1)] == ["Dynamo graph (Torch IR)", "Kernels"]
    assert "torch.sin" in pane_text(page, 0)
    assert re.search(r"===== cpp_fused_\w+ \(cpp", pane_text(page, 1))
    for index in (0, 1):
        assert in_view(page, f"{pane(page, index)} .cm-scroller")
        menu = page.eval_on_selector_all(f"{pane(page, index)} .pane-stage option", "(os) => os.map((o) => o.textContent)")
        assert not [entry for entry in menu if re.search(r"\((none|off|failed)\)$", entry)], menu
    shot(page, "pasted_script")


def test_a_pane_set_to_a_stage_its_compile_lacks_shows_a_default(visit, browser):
    """A share link (or a lesson's scene) naming a stage this result lacks: the pane shows the
    static report's default stages instead; the link it shares again names what it shows."""
    page = visit["page"]
    page.click("#share")
    page.wait_for_function("location.pathname.startsWith('/r/')")
    fragment = unquote(page.evaluate("location.hash"))
    assert "pane=0/0,dynamo_graph" in fragment or "pane=,dynamo_graph" in fragment, fragment
    assert "torchscript" not in fragment and ",kernels," in fragment, fragment
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    other = context.new_page()
    path = page.evaluate("location.pathname")
    open_page(other, f"{visit['server']}{path}#pane=0/0,torchscript_code,text,&pane=1/0,torchscript_code,text,")
    assert [shown_stage(other, 0), shown_stage(other, 1)] == ["Dynamo graph (Torch IR)", "Kernels"]
    assert "torch.sin" in pane_text(other, 0)
    assert "has no" not in pane_text(other, 0) + pane_text(other, 1)
    shot(other, "share_link_absent_stage")
    context.close()


def test_compile_rows_read_as_words_and_a_stage_chip_shows_its_stage(visit):
    page = visit["page"]
    page.click("[data-tab=compiles]")
    markers = page.locator(".compile-row .chip.marker").all_inner_texts()
    assert any(m.startswith("⚠ graph break") for m in markers), markers
    assert any(m.startswith("↻ recompile") for m in markers), markers
    chips = " ".join(page.locator(".compile-row .chips").all_inner_texts())
    assert "graph_break" not in chips and "recompile " not in chips.replace("↻ recompile", "")
    row = page.locator(".compile-row[data-compile='1/0']")
    row.locator(".chip.stage", has_text="Generated code").first.click()
    assert shown_stage(page, 0) == "Generated code"
    assert page.eval_on_selector(f"{pane(page, 0)} .pane-compile", "(s) => s.value") == "1/0"
    assert "cpp_fused" in pane_text(page, 0) and in_view(page, f"{pane(page, 0)} .cm-scroller")
    shot(page, "chip_click")
    first = page.locator(".compile-row[data-compile='0/0']")
    first.locator(".chip.stage", has_text="Dynamo graph").first.click()  # for the graph view below
    assert shown_stage(page, 0) == "Dynamo graph (Torch IR)"


def test_the_run_said_which_step_it_was_in_and_what_remained(visit):
    texts = [s["text"] for s in visit["statuses"]]
    running = [t for t in texts if t.startswith("Running")]
    assert any("running the script · compile 0/0" in t for t in running), running[-5:]
    assert any(re.search(r"compiles? so far", t) for t in running)
    assert any("then timing the compiled calls against eager" in t for t in running)
    timing = [s for s in visit["statuses"] if "timing eager and compiled (2 calls): step" in s["text"]]
    assert timing and all(s["stop"] for s in timing)  # the timings can be stopped
    assert any("then tracing the Core ATen and prims views" in s["text"] for s in timing)
    assert not any(s["stop"] for s in visit["statuses"] if "running the script" in s["text"])


def test_a_reload_shows_the_last_result_again(visit):
    page = visit["page"]
    page.goto(visit["server"] + "/")  # the address bar may hold the share link: the plain page
    page.wait_for_selector("body[data-ready]")
    assert "Loaded from the store" in page.inner_text("#run .run-status")
    assert shown_stage(page, 0) == "Dynamo graph (Torch IR)"
    assert "torch.sin" in pane_text(page, 0) and in_view(page, f"{pane(page, 0)} .cm-scroller")
    assert page.is_hidden("#stale")
    shot(page, "reload")


def test_the_graph_view_opens_fitted_to_its_pane(visit):
    page = visit["page"]
    page.click(f"{pane(page, 0)} .segmented button:has-text('Graph')")
    body = f"{pane(page, 0)} .pane-body"
    page.wait_for_selector(f"{body}[data-ready]")
    page.wait_for_timeout(300)  # the canvas settles after the pane's last resize
    canvas = page.locator(f"{body} .graph-canvas").bounding_box()
    height, points = page.evaluate("""(sel) => {
        const view = document.querySelector(sel).graphView;
        const [, y0, , y1] = view.canvas.bounds();
        return [y1 - y0, view.graph.nodes.map((n) => {
            const [x0, y0] = view.canvas.clientPoint({ ...n, x: n.x - n.w / 2, y: n.y - n.h / 2 });
            const [x1, y1] = view.canvas.clientPoint({ ...n, x: n.x + n.w / 2, y: n.y + n.h / 2 });
            return [x0, y0, x1, y1];
        })];
    }""", body)
    assert len(points) >= 10 and height > canvas["height"]  # it does not fit at zoom 1
    for x0, y0, x1, y1 in points:  # every box inside the canvas, the canvas inside the window
        assert canvas["x"] - 1 <= x0 and x1 <= canvas["x"] + canvas["width"] + 1, (x0, x1, canvas)
        assert canvas["y"] - 1 <= y0 and y1 <= canvas["y"] + canvas["height"] + 1, (y0, y1, canvas)
    assert in_view(page, f"{body} .graph-canvas")
    shot(page, "graph_fitted")
    page.click(f"{pane(page, 0)} .segmented button:has-text('Code')")


def test_clickers_step_through_a_lesson_and_leaving_it_gives_the_layout_back(visit):
    page = visit["page"]
    own = [shown_stage(page, 0), shown_stage(page, 1)]
    page.click("#gallery-button")
    page.click("#gallery-menu [data-lesson=trace_script_compile]")
    page.wait_for_selector("body[data-scene='trace_script_compile 0']", timeout=RUN_S * 1000)
    page.click(".lesson-text")  # the focus on the page, not in the editor
    page.keyboard.press("PageDown")
    page.wait_for_selector("body[data-scene='trace_script_compile 1']")
    assert "step 2 of" in page.inner_text(".lesson-part")
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("body[data-scene='trace_script_compile 0']")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("body[data-scene='trace_script_compile 1']")
    page.keyboard.press("PageUp")
    page.wait_for_selector("body[data-scene='trace_script_compile 0']")
    page.click(".cm-content")  # in the editor the arrows move the cursor, not the lesson
    page.keyboard.press("ArrowDown")
    page.wait_for_timeout(300)
    assert "step 1 of" in page.inner_text(".lesson-part")
    assert in_view(page, ".lesson-part")
    shot(page, "clicker_step")
    page.click(".lesson-close")
    assert [shown_stage(page, 0), shown_stage(page, 1)] == own


def test_an_empty_editor_says_what_to_do(visit):
    page = visit["page"]
    refused = len(visit["refused"])
    page.click(".cm-content")
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.press("Control+Enter")
    status = page.inner_text("#run .run-status")
    assert "editor is empty" in status and "paste a script" in status, status
    assert page.get_attribute("#run", "data-status") == "empty"
    assert "FAILED" not in status.upper().split() and in_view(page, "#run .run-status")
    assert visit["refused"][refused:] == []  # nothing was sent
    shot(page, "empty_editor")


def test_stopping_the_timings_keeps_the_stages_shown(visit):
    """On a server with no event stream to spare (a 429): the page polls, and the polls say the
    phase too."""
    page = visit["page"]
    page.route("**/api/jobs/*/events", lambda route: route.fulfill(
        status=429, content_type="application/json", body='{"ok": false, "status": 429, "error": "busy"}'))
    paste(page, SLOW_TIMING)
    page.keyboard.press("Control+Enter")
    stop = page.wait_for_selector("#run .stop-run:visible", timeout=RUN_S * 1000)
    running = page.inner_text("#run .run-status")
    assert "timing eager and compiled" in running and "then timing" not in running, running
    assert "then tracing the Core ATen and prims views" in running and in_view(page, "#run .stop-run")
    shot(page, "timing_running")
    stop.click()
    page.wait_for_selector("#run[data-status=failed]", timeout=60_000)
    status = page.inner_text("#run .run-status")
    assert status.upper().startswith("STOPPED") and "stages captured until then are shown" in status
    assert page.get_attribute("[data-tab=compiles]", "aria-selected") == "true"
    assert shown_stage(page, 0) == "Dynamo graph (Torch IR)" and "torch.relu" in pane_text(page, 0)
    assert "stopped before its end" in page.inner_text(f"{pane(page, 0)} .pane-error-strip")
    shot(page, "timing_stopped")
