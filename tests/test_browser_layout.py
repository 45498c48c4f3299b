"""The page at a laptop's size (1024x768, two panes beside the editor) and on a projector
(presenter mode, 1280x720), in headless Chromium: what a pane shows fits its width, its tools
keep to one row, code breaks between words, and what the room reads is room-sized."""

from __future__ import annotations

import pytest

from compiler_core.gallery import get_example

from test_browser import BREAK, open_page, page, pane, shot  # noqa: F401 (page: a fixture)

pytest_plugins = ["test_app_fixtures"]


def training_step(compiled):
    """test_graph_sync's run of the training step (the same options): one compile a session."""
    return compiled(get_example("training_step").source, device="cpu", measure=False, views=False)


# The words of an element's text that the browser split across lines though each would fit on
# one: [word, its width, the element's width] (a Range's boxes, one per line a word spans).
SPLIT_WORDS = """(el) => {
    const text = el.firstChild, range = document.createRange(), split = [];
    let start = 0;
    for (const word of text.data.split(' ')) {
        range.setStart(text, start); range.setEnd(text, start + word.length);
        const pieces = [...range.getClientRects()];
        const width = pieces.reduce((sum, r) => sum + r.width, 0);  // as one line
        const rows = new Set(pieces.map((r) => Math.round(r.top)));
        if (rows.size > 1 && width < el.clientWidth) split.push([word, width, el.clientWidth]);
        start += word.length + 1;
    }
    return split;
}"""


def test_a_narrow_pane_fits_saved_for_backward_and_keeps_its_tools_on_one_row(page, live_server,
                                                                               compiled):
    job = training_step(compiled)
    page.set_viewport_size({"width": 1024, "height": 768})
    open_page(page, f"{live_server}/r/{job['key']}")
    second = pane(page, 1)
    page.select_option(f"{second} .pane-stage", "aot_forward")
    saved = page.wait_for_selector(f"{second} .saved-list")
    assert "graph input" in saved.inner_text()
    width = saved.evaluate("(list) => [list.scrollWidth, list.clientWidth]")
    assert width[0] <= width[1], f"Saved for backward is {width[0]} px wide in {width[1]} px"
    spans = page.eval_on_selector(second, """(pane) => Object.fromEntries(['.segmented', '.copy', '.download']
        .map((tool) => { const box = pane.querySelector(tool).getBoundingClientRect();
                         return [tool, [Math.round(box.top), Math.round(box.bottom)]]; }))""")
    tops, bottoms = zip(*spans.values())
    assert max(tops) < min(bottoms), f"the tools are not on one row (top, bottom px): {spans}"
    shot(page, "narrow_saved_for_backward")


def test_guard_code_breaks_between_words_in_a_narrow_pane(page, live_server, compiled):
    page.set_viewport_size({"width": 1024, "height": 768})
    open_page(page, f"{live_server}/r/{training_step(compiled)['key']}")
    page.select_option(f"{pane(page, 1)} .pane-stage", "guards")
    codes = page.locator(f"{pane(page, 1)} .guard-code")
    long = [code for code in codes.element_handles() if "DispatchKeySet(" in code.inner_text()]
    assert long, "no check_tensor guard to look at"
    assert long[0].evaluate("(el) => el.offsetHeight > 40")  # it wraps: the test can tell
    split = [code.evaluate(SPLIT_WORDS) for code in long]
    assert split == [[]] * len(long), split


def test_presenter_mode_shows_the_run_summary_at_room_size(page, live_server, compiled):
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, f"{live_server}/r/{training_step(compiled)['key']}?present=1")
    summary = page.wait_for_selector("#summary:not([hidden])")
    assert "1 graph" in summary.inner_text()
    assert summary.evaluate("(el) => parseFloat(getComputedStyle(el).fontSize)") >= 18  # 1.2rem
    shot(page, "presenter_summary")



def test_the_kernel_attribution_table_fits_a_pane_at_1280(page, live_server, compiled):
    job = compiled(BREAK, device="cpu")  # test_browser's timings run
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, f"{live_server}/r/{job['key']}")
    page.select_option(f"{pane(page, 1)} .pane-stage", "timings")
    body = page.wait_for_selector(f"{pane(page, 1)} .pane-body[data-ready]")
    if not page.locator(f"{pane(page, 1)} .attribution-table").count():
        pytest.skip("the run's kernel times were withheld (profiled on a busy machine)")
    overflow = body.evaluate("""(body) => Math.round(body.querySelector('.attribution-table')
        .getBoundingClientRect().right - body.getBoundingClientRect().left - body.clientWidth)""")
    assert overflow <= 0, f"the table's last columns (saved, lines) are {overflow} px past the pane"
    past = [cell for cell in body.evaluate(POINT_CELLS) if cell["past"] > 0]
    assert past == [], f"the speed-up, time saved or the waterfall's figures are past the pane: {past}"
    page.locator(f"{pane(page, 1)} .attribution-table").scroll_into_view_if_needed()
    shot(page, "attribution_1280")


# The cells that carry a timing's point (the speed-up, each kernel's time saved, the waterfall's
# savings), measured in the pane: how far past its right edge each ends, the words split across lines.
POINT_CELLS = """(body) => {
    const right = body.getBoundingClientRect().left + body.clientWidth;
    const cells = '.e2e td.speedup, .attribution-table :is(td.saved, td.cost), .waterfall-value';
    return [...body.querySelectorAll(cells)]
        .map((cell) => ({ speedup: cell.matches('.speedup'), text: cell.textContent,
                          past: Math.round(cell.getBoundingClientRect().right - right), split: (%s)(cell) }));
}""" % SPLIT_WORDS


@pytest.mark.parametrize("width,height", [(1024, 768), (1280, 720)])
def test_presenter_mode_shows_the_speed_up_and_time_saved_whole_in_a_pane(page, live_server, compiled,
                                                                          width, height):
    job = compiled(BREAK, device="cpu")  # test_browser's timings run
    page.set_viewport_size({"width": width, "height": height})
    open_page(page, f"{live_server}/r/{job['key']}?present=1")
    page.select_option(f"{pane(page, 1)} .pane-stage", "timings")
    body = page.wait_for_selector(f"{pane(page, 1)} .pane-body[data-ready]")
    if not page.locator(f"{pane(page, 1)} .attribution-table").count():
        pytest.skip("the run's kernel times were withheld (profiled on a busy machine)")
    cells = body.evaluate(POINT_CELLS)
    assert any(cell["speedup"] for cell in cells) and not all(cell["speedup"] for cell in cells), cells
    assert [cell for cell in cells if cell["past"] > 0 or cell["split"]] == [], cells
    page.locator(f"{pane(page, 1)} .e2e").scroll_into_view_if_needed()
    shot(page, f"presenter_timings_{width}")
    page.locator(f"{pane(page, 1)} .attribution-table").scroll_into_view_if_needed()
    shot(page, f"presenter_attribution_{width}")
