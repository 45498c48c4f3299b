"""Teaching views in the browser (issue 11): panes as a diff, a recompile's failed guard, folded
and symbolic guards, a recompile's gutter mark and the summary strip, the lesson path on a first
visit, error messages and long paths."""

from __future__ import annotations

import time

import pytest

from compiler_core import get_example, list_lessons
from test_browser import (  # noqa: F401 (page: a fixture)
    gutter_line, open_page, page, pane, run_script, shot)
from test_presenter_browser import opened

pytest_plugins = ["test_app_fixtures"]

# f and g are one graph with other node names (l_x_ / l_inp_); h multiplies by 3, not 2.
RENAMES = '''import torch


def f(x):
    return torch.relu(x) * 2


def g(inp):
    return torch.relu(inp) * 2


def h(x):
    return torch.relu(x) * 3


for fn in (f, g, h):
    torch.compile(fn, backend="eager")(torch.ones(4))
'''
RECOMPILE = get_example("recompile_on_shape_change").source
# Its prims view has FX lines from torch's own files (`# File: /root/.../site-packages/torch/...`).
LINEAR = """import torch

m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU())
torch.compile(m, backend="aot_eager")(torch.ones(2, 4))
"""


def show(page, index, compile_id, stage):
    page.select_option(f"{pane(page, index)} .pane-compile", compile_id)
    page.select_option(f"{pane(page, index)} .pane-stage", stage)


def marked(page, index, cls):
    """The text of a pane's lines marked with `cls`."""
    return page.locator(f"{pane(page, index)} .cm-line.{cls}").all_inner_texts()


def test_two_panes_as_a_diff_rename_only_lines_unmarked(page, live_server, compiled):
    job = compiled(RENAMES, device="cpu", measure=False)
    assert [c["id"] for c in job["result"]["compiles"]] == ["0/0", "1/0", "2/0"]
    open_page(page, f"{live_server}/r/{job['key']}")
    show(page, 0, "0/0", "dynamo_graph")
    show(page, 1, "1/0", "dynamo_graph")
    page.select_option(f"{pane(page, 1)} .pane-diff", "0")
    assert "l_inp_" in page.inner_text(f"{pane(page, 1)} .cm-content")  # the names do differ
    new = marked(page, 1, "tb-diff-new")
    assert new and all(line.strip().startswith("# File:") for line in new), new  # g's line, not f's
    assert "renamed" in page.inner_text(f"{pane(page, 1)} .pane-diff-info")
    assert page.input_value(f"{pane(page, 0)} .pane-diff") == "1"  # both panes say they pair
    shot(page, "diff_rename_only")

    show(page, 1, "2/0", "dynamo_graph")  # a real change: * 3
    new = marked(page, 1, "tb-diff-new")
    assert any("mul" in line and "3" in line for line in new), new
    assert not [line for line in new if "= torch.relu(l_x_)" in line]  # the same line in both
    assert any("* 2" in line for line in marked(page, 0, "tb-diff-old"))
    shot(page, "diff_real_change")


def test_a_recompile_diffs_against_the_compile_it_replaced(page, live_server, compiled):
    job = compiled(RECOMPILE, device="cpu", measure=False)
    open_page(page, f"{live_server}/r/{job['key']}")
    page.click(".between.recompile button[data-stage=guards]")
    assert page.input_value(f"{pane(page, 0)} .pane-compile") == "0/0"
    assert page.input_value(f"{pane(page, 1)} .pane-compile") == "0/1"
    (failed,) = marked(page, 0, "tb-failed")  # the guard the reason names, in 0/0's tree
    assert "TENSOR_MATCH" in failed and "size=[8, 16]" in failed
    assert any("size()[0]" in line for line in marked(page, 1, "tb-diff-new"))  # 0/1's new guard
    shot(page, "diff_guards_failed")

    page.click(f"{pane(page, 0)} .segmented button:has-text('Grouped')")
    failed_item = page.locator(f"{pane(page, 0)} .guards li.failed")
    assert "TENSOR_MATCH" in failed_item.inner_text() and "0/1" in failed_item.inner_text()
    fold = page.locator(f"{pane(page, 0)} .guard-fold summary")  # five marking guards, one line
    assert fold.inner_text().startswith("DIMENSION_DYNAMIC_MARKING_GUARD") and "×5" in fold.inner_text()
    page.click(f"{pane(page, 1)} .segmented button:has-text('Grouped')")
    symbolic = page.locator(f"{pane(page, 1)} .guard-group.symbolic")
    assert symbolic.get_attribute("open") is not None
    assert "2 <= L['x'].size()[0]" in symbolic.inner_text() and "line 13" in symbolic.inner_text()
    shot(page, "guards_failed_folded_symbolic")

    page.click(f"{pane(page, 1)} .compare")  # "⇆ vs 0/0": the same, from the pane
    page.wait_for_selector(f"{pane(page, 1)} .cm-line.tb-diff-new")


@pytest.mark.parametrize("present", ["0", "1"])
def test_a_recompile_is_marked_at_its_call_and_summed_up_under_the_top_bar(browser, live_server,
                                                                           compiled, present):
    job = compiled(RECOMPILE, device="cpu", measure=False)  # the test above's run
    (recompile,) = job["result"]["recompiles"]
    call = next(i for i, text in enumerate(RECOMPILE.split("\n"), 1) if "randn(4, 16)" in text)
    assert recompile["line"] == call
    with opened(browser, f"{live_server}/r/{job['key']}?present={present}") as page:  # 1280x720
        strip = page.locator("#summary")
        assert strip.inner_text() == f"2 graphs, 0 breaks, 1 recompile (l.{call}: x.size()[0] changed: 8 -> 4)"
        assert page.evaluate("""() => { const s = document.querySelector('#summary'), r = s.getBoundingClientRect();
            return r.top >= 0 && r.bottom <= innerHeight && r.right <= innerWidth && s.scrollWidth <= s.clientWidth; }""")
        reason = page.locator(".between.recompile code")
        assert reason.inner_text() == "x.size()[0] changed: 8 -> 4"
        assert "tensor 'x' size mismatch at index 0. expected 8, actual 4" in reason.get_attribute("title")
        strip.locator(".line-link").click()  # selects the call's line, scrolled into view
        assert page.evaluate("document.querySelector('#editor .cm-activeLine').textContent") == \
            RECOMPILE.split("\n")[call - 1]
        assert gutter_line(page, "cm-lint-marker-info") == call
        page.hover("#editor .cm-lint-marker-info")
        assert "Recompile (0/1): x.size()[0] changed: 8 -> 4" in page.wait_for_selector(".cm-tooltip-lint").inner_text()
        shot(page, f"recompile_gutter_summary_present{present}")


def test_long_paths_are_shown_short_with_the_full_path_on_hover(page, live_server, compiled):
    job = compiled(LINEAR, device="cpu", measure=False)
    prims = job["result"]["compiles"][0]["stages"]["prims"]["text"]
    assert "/site-packages/torch/_prims_common/wrappers.py" in prims  # in the stage's text
    open_page(page, f"{live_server}/r/{job['key']}")
    show(page, 0, "0/0", "prims")
    titles = page.eval_on_selector_all(f"{pane(page, 0)} .tb-path", "(els) => els.map((e) => e.title)")
    assert any(t.endswith("/site-packages/torch/_prims_common/wrappers.py") for t in titles), titles
    text = page.inner_text(f"{pane(page, 0)} .cm-content")
    assert "# File: torch/_prims_common/wrappers.py:" in text and "site-packages" not in text
    short = page.evaluate("""async () => {
        const { shortPaths } = await import('/static/js/paths.js');
        const text = '# File: /tmp/torchbolt-job-k2x9/job/main.py:12 in f, code: y = x # /job/main.py:3'
                     + '\\nL[\\'k\\'] == 1  # return x * k  # ob/main.py:6 in f  # a/b.py is no path';
        return shortPaths(text).map(({ from, to, hide }) => text.slice(from + hide, to));
    }""")
    # a temporary folder's script, a sandboxed one, and torch's cut form in a guard's comment
    assert short == ["main.py", "main.py", "main.py"]


def test_an_error_message_keeps_its_line_breaks_and_links(page, live_server):
    open_page(page, f"{live_server}/?example=print_graph_break")
    run_script(page, "raise RuntimeError('first line\\nsecond line: see "
                     "https://pytorch.org/docs/stable/torch.compiler.html for more')\n")
    message = page.locator(".error-box .message")
    assert "first line\nsecond line" in message.inner_text()
    link = message.locator("a")
    assert link.get_attribute("href") == "https://pytorch.org/docs/stable/torch.compiler.html"
    assert link.get_attribute("rel") == "noopener noreferrer"


def test_a_first_visit_opens_on_the_first_lesson_with_its_result(page, app, live_server):
    lessons = list_lessons()
    (handle,) = app.extensions["torchbolt.runs"].warm([lessons[0][1].source])  # as the server does at start
    deadline = time.monotonic() + 180
    while not handle.is_finished and time.monotonic() < deadline:
        time.sleep(0.2)
    open_page(page, live_server + "/")  # a fresh browser: no draft, no share link
    page.wait_for_selector("#run[data-status=done]")
    assert page.text_content(".run-status").startswith("done Loaded from the store")
    card = page.inner_text("#lesson")
    assert f"Lesson 1 of {len(lessons)}" in card and lessons[0][0].concept in card
    page.wait_for_selector(f"body[data-scene='{lessons[0][1].slug} 0']")  # its first step's panes
    assert "def f(x: Tensor)" in page.inner_text(f"{pane(page, 0)} .cm-content")  # jit.trace's code
    assert not page.locator(".pane .empty").count()
    assert page.get_attribute(".lesson-next", "title") == f"Step 2 of {len(lessons[0][0].steps)} (Alt+N)"
    page.click("#gallery-button")
    assert page.locator("#gallery-menu [data-lesson]").all_inner_texts()[0].startswith(
        f"1. {lessons[0][0].concept}")
    shot(page, "first_visit_lesson")
    page.keyboard.press("Escape")
    page.click(".cm-content")
    page.keyboard.press("Control+End")
    page.keyboard.insert_text("# a speaker's edit\n")
    assert page.is_visible("#lesson")  # the lesson's code, edited: still its card
    page.keyboard.press("Control+A")
    page.keyboard.insert_text("import torch\n")
    assert page.is_hidden("#lesson")  # other code pasted over it: the card would mislead
