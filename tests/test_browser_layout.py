"""The page at a laptop's size (1024x768, two panes beside the editor), in headless Chromium:
what a pane shows fits its width, and its tools keep to one row."""

from __future__ import annotations

from compiler_core.gallery import get_example

from test_browser import open_page, page, pane, shot  # noqa: F401 (page: a fixture)

pytest_plugins = ["test_app_fixtures"]


def test_a_narrow_pane_fits_saved_for_backward_and_keeps_its_tools_on_one_row(page, live_server,
                                                                               compiled):
    # test_graph_sync's run of the training step (the same options): one compile a session.
    job = compiled(get_example("training_step").source, device="cpu", measure=False, views=False)
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
