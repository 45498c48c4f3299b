"""A speaker's run through the page (issue 24), in headless Chromium at projector sizes: every
lesson in presenter mode with nothing left "Loading", nothing wider than the window and the
lesson card's buttons in one place; a syntax error shown in every pane; stale and cleared
results; the diff choice reset between lessons; timings in words; the smaller fixes.

Lessons are compiled once per session (the server's store answers them after that).
Screenshots go to test-artifacts/presenter_*.png.
"""

from __future__ import annotations

import contextlib

import pytest

from compiler_core import list_lessons
from test_browser import BREAK, pane, shot

pytest_plugins = ["test_app_fixtures"]

FINISHED = "#run[data-status=done], #run[data-status=failed]"
NOTHING_LOADING = """() => ![...document.querySelectorAll('.pane-body')]
    .some((body) => body.textContent.startsWith('Loading'))"""
SYNTAX_ERROR = "import torch\n\n\ndef f(x:\n    return x\n"


# A refused event stream or expensive request is the server's protocol, not a page error: the
# page polls instead (README, "Serving a meetup room"); the session's earlier browser tests may
# still hold this client's stream slots (a closed stream frees its slot at the next heartbeat).
REFUSED = "the server responded with a status of 429"


@contextlib.contextmanager
def opened(browser, url, width=1280, height=720):
    """A fresh browser (no draft, no settings) at this size on `url`; no page error allowed."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    problems = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("console", lambda m: m.type == "error" and REFUSED not in m.text
            and problems.append(f"console: {m.text}"))
    page.set_default_timeout(30_000)
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    yield page
    context.close()
    assert not problems


def box(page, selector):
    return page.locator(selector).bounding_box()


def lesson_state(page):
    """What the speaker's test checks on each lesson, measured in the page."""
    return page.evaluate("""() => {
        const place = (sel) => { const r = document.querySelector(sel).getBoundingClientRect();
                                 return [Math.round(r.x), Math.round(r.y)]; };
        const inside = (inner, outer) => { const i = inner.getBoundingClientRect(), o = outer.getBoundingClientRect();
                                           return i.width > 0 && i.left >= o.left - 1 && i.right <= o.right + 1; };
        return {
            step: document.querySelector('.lesson-step').textContent,
            next: place('.lesson-next'), previous: place('.lesson-prev'), close: place('.lesson-close'),
            overflow: document.documentElement.scrollWidth - innerWidth,
            saveInside: [...document.querySelectorAll('.pane')].every((p) => inside(p.querySelector('.download'), p)),
            backticks: document.querySelector('.lesson-text').textContent.includes('`'),
        };
    }""")


@pytest.mark.parametrize("width,height", [(1280, 720), (1920, 1080)])
def test_a_speaker_walks_every_lesson_in_presenter_mode(browser, live_server, width, height):
    lessons = list_lessons()
    seen = []
    with opened(browser, f"{live_server}/?present=1", width, height) as page:  # opens on lesson 1
        assert page.locator(".pane").count() == 2
        assert page.get_attribute("#present", "aria-pressed") == "true"
        assert "mode: default" in page.inner_text("#options [name=mode]")  # a labelled menu
        for index in range(len(lessons)):
            page.wait_for_selector(FINISHED, timeout=180_000)
            page.wait_for_function(NOTHING_LOADING, timeout=30_000)
            state = lesson_state(page)
            assert state["step"] == f"Lesson {index + 1} of {len(lessons)}"
            assert state["overflow"] <= 0, state
            assert state["saveInside"], state  # pane headers keep Save
            assert state["close"][1] == state["next"][1], state  # the close button does not wrap
            assert not state["backticks"], state  # `code` is shown as code
            seen.append((tuple(state["next"]), tuple(state["previous"])))
            if width == 1280:
                shot(page, f"presenter_lesson_{index + 1}")
            if index + 1 == len(lessons):
                break
            if width == 1280:
                page.click(".lesson-next")
            else:
                page.keyboard.press("Alt+KeyN")  # the key for the next lesson
            page.wait_for_selector(f".lesson-step:text('Lesson {index + 2} of')")
        page.keyboard.press("Alt+KeyP")
        page.wait_for_selector(f".lesson-step:text('Lesson {len(lessons) - 1} of')")
    assert len(set(seen)) == 1, seen  # Next and Previous never move


def test_a_syntax_error_shows_in_every_pane_and_tab(browser, live_server):
    with opened(browser, f"{live_server}/?example=print_graph_break&present=1") as page:
        page.click(".cm-content")
        page.keyboard.press("Control+A")
        page.keyboard.insert_text(SYNTAX_ERROR)
        page.keyboard.press("Control+Enter")
        page.wait_for_selector("#run[data-status=failed]", timeout=60_000)
        page.wait_for_function(NOTHING_LOADING, timeout=10_000)
        for index in range(2):
            text = page.inner_text(f"{pane(page, index)} .pane-body")
            assert "did not run to a compile" in text and "SyntaxError at line 4" in text, text
        page.click("[data-tab=compiles]")
        assert "did not run to a compile" in page.inner_text(".tab-panel.compiles")
        page.click("[data-tab=breaks]")
        breaks = page.inner_text(".tab-panel.breaks")
        assert "SyntaxError at line 4" in breaks and "whole graphs" not in breaks, breaks
        shot(page, "presenter_syntax_error")


def test_an_edit_marks_the_result_stale_and_an_example_clears_it(browser, live_server, compiled):
    job = compiled(BREAK)
    with opened(browser, f"{live_server}/r/{job['key']}") as page:
        assert page.is_hidden("#stale") and page.is_enabled("#share")
        page.click(".cm-content")
        page.keyboard.press("Control+End")
        page.keyboard.insert_text("# an edit\n")
        assert page.is_visible("#stale")  # the panes show other code than the editor's
        shot(page, "presenter_stale")
        page.keyboard.press("Control+Z")
        assert page.is_hidden("#stale")  # the code that ran again
        page.click("#gallery-button")
        page.click("#gallery-menu [data-slug=mlp_fusion]")
        assert page.is_hidden("#stale") and page.is_disabled("#share") and page.is_disabled("#download")
        assert page.evaluate("location.pathname") == "/"  # no longer the old result's link
        for index in range(2):
            assert page.inner_text(f"{pane(page, index)} .pane-body").startswith("Compile a script")
        assert page.locator(".compile-row").count() == 0


def test_a_failed_guard_is_reachable_and_the_diff_ends_with_its_lesson(browser, live_server):
    recompile = [example.slug for _, example in list_lessons()].index("recompile_on_shape_change")
    with opened(browser, f"{live_server}/?example=print_graph_break&present=1") as page:
        page.click("#gallery-button")
        page.click("#gallery-menu [data-lesson=recompile_on_shape_change]")
        page.wait_for_selector("#run[data-status=done]", timeout=180_000)
        page.click(".between.recompile button[data-stage=guards]")
        failed = page.locator(f"{pane(page, 0)} .cm-line.tb-failed")
        assert "size=[8, 16]" in failed.inner_text()
        line, body = failed.bounding_box(), box(page, f"{pane(page, 0)} .pane-body")
        assert body["x"] <= line["x"] and line["x"] + line["width"] <= body["x"] + body["width"]  # wrapped
        assert page.locator(".cm-line.tb-diff-new").count()  # 0/1's new guard
        assert page.evaluate("""() => { const style = (sel) => getComputedStyle(document.querySelector(sel));
            return style('.tb-failed').outlineStyle === 'dashed' && style('.tb-diff-new').outlineStyle !== 'dashed'; }""")
        shot(page, "presenter_failed_guard")
        page.click(".lesson-next")
        page.wait_for_selector(f".lesson-step:text('Lesson {recompile + 2} of')")
        page.wait_for_selector("#run[data-status=done]", timeout=180_000)
        assert page.locator(".cm-line.tb-diff-old, .cm-line.tb-diff-new").count() == 0
        assert [page.input_value(f"{pane(page, i)} .pane-diff") for i in range(2)] == ["", ""]


def test_timings_say_in_words_what_they_measured(browser, live_server, compiled):
    job = compiled(BREAK, device="cpu")
    with opened(browser, f"{live_server}/r/{job['key']}?present=1") as page:
        page.select_option(f"{pane(page, 1)} .pane-stage", "timings")
        page.wait_for_selector(f"{pane(page, 1)} .pane-body[data-ready]")
        verdict = page.inner_text(f"{pane(page, 1)} .speed-verdict")
        assert verdict.split(":")[0] in ("Faster", "Slower", "Can't tell on this machine"), verdict
        terms = page.eval_on_selector_all(f"{pane(page, 1)} abbr.term", "(els) => els.map((e) => [e.textContent, e.title])")
        assert {"IQR", "busy", "speed-up"} <= {word for word, _ in terms} and all(title for _, title in terms)
        page.locator(f"{pane(page, 1)} .ytitle").scroll_into_view_if_needed()
        title, plot = box(page, f"{pane(page, 1)} .ytitle"), box(page, f"{pane(page, 1)} .timing-plot")
        assert title["x"] >= plot["x"]  # the y axis's title is not cut
        shot(page, "presenter_timings")


def test_the_smaller_things_a_room_noticed(browser, live_server, compiled):
    job = compiled(BREAK)
    with opened(browser, f"{live_server}/r/{job['key']}") as page:
        assert "[object Object]" not in page.get_attribute("#env", "title")
        chips = page.locator(".compile-row .chip.stage").all_inner_texts()
        assert "Dynamo graph (Torch IR)" in chips and "dynamo_graph" not in chips
        assert page.evaluate("getComputedStyle(document.querySelector('.cm-content')).fontVariantLigatures") == "none"
        page.click("#share")
        page.wait_for_function("document.getElementById('toast').textContent.includes('/r/')")
        page.wait_for_timeout(500)  # the copy has finished: the link is still what the toast says
        assert f"/r/{job['key']}" in page.inner_text("#toast")
        folded = page.evaluate("""async () => {
            const { RunPanel } = await import('/static/js/runpanel.js');
            const root = document.createElement('div');
            const panel = new RunPanel(root, { runTab: 'output' }, { errorKinds: [], onChange() {} });
            panel.setResult({ stdout: 'once\\n', replay_output: { lines: 3, bytes: 15, head: 'again\\nagain\\n' } });
            const details = root.querySelector('details.replay-output');
            return [root.querySelector('.stdout').textContent, details.open, details.textContent];
        }""")
        assert folded[:2] == ["once\n", False]
        assert "timing replays printed 3 lines — not your script's output" in folded[2]
        assert "the first 2 of 3 lines" in folded[2]
