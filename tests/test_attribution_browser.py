"""The kernel attribution on the page (issue 44): the headline, the waterfall and the table of
a real result (the job of tests/test_attribution.py, rebuilt from its records with its profiles
taken as not withheld, so that it has rows on a busy machine too), stored and opened by its
share key; a row's line link selects the user's line, its kernel link opens the kernel's source.
"""

from __future__ import annotations

import os

import pytest

from app.store import KEY_CHARS
from test_attribution import GELU_LINE, SCRIPT
from test_browser import open_page, page, pane, shot  # noqa: F401 (page: the fixture)

pytest_plugins = ["test_app_fixtures"]
CASES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "bench", "attribution_cases")



@pytest.fixture(scope="module")
def attributed(kept_runs):
    return kept_runs(SCRIPT, "attributed.py")


CURSOR_LINE = """() => window.getSelection().anchorNode?.parentElement?.closest('.cm-line')?.textContent"""


def test_the_attribution_shows_what_each_kernel_replaced_with_links(page, live_server, app,
                                                                      attributed):
    _, quiet = attributed
    attribution = quiet["timings"][0]["attribution"]
    key = "a7" * (KEY_CHARS // 2)
    app.extensions["torchbolt.runs"].store.put(key, SCRIPT, {"device": "cpu"}, quiet)
    open_page(page, f"{live_server}/r/{key}")
    page.select_option(f"{pane(page, 1)} .pane-stage", "timings")
    section = f"{pane(page, 1)} .attribution"
    page.wait_for_selector(section)
    assert page.inner_text(f"{section} .attribution-headline") == attribution["headline"]
    assert page.locator(f"{section} .waterfall-row").count() == len(attribution["waterfall"])
    shown = page.locator(f"{section} tr.attribution-row").evaluate_all(
        "rows => rows.map((row) => row.dataset.kernel)")
    assert shown == [r["kernel"] for r in attribution["rows"]]  # sorted by time saved
    (fused,) = [name for name in shown if name.startswith("cpp_fused")]
    row = f'{section} tr[data-kernel="{fused}"]'
    assert "gelu" in page.inner_text(row) and "sin" in page.inner_text(row)
    shot(page, "attribution")
    page.click(f"{row} .line-link")
    assert "gelu" in page.evaluate(CURSOR_LINE)  # the editor's cursor on the user's line
    assert f"line {GELU_LINE}" == page.inner_text(f"{row} .line-link")
    page.click(f"{row} .kernel-link")
    assert page.get_attribute(pane(page, 0), "data-kernel") == fused  # the Kernels stage
    assert page.locator(f"{pane(page, 0)} .pane-stage").input_value() == "kernels"


def test_a_cuda_graph_replay_shows_as_one_row_with_its_kernels(page, live_server, app):
    """A reduce-overhead job recorded on an H100 (tests/test_attribution_gpu_data.py): the
    replay is one row naming the replay, its graph's kernels as links and the kernels the
    profiler saw it run, with their times."""
    from test_attribution_gpu_data import recorded
    result, _ = recorded("cudagraph_replay")
    (replay,) = [r for r in result["timings"][0]["attribution"]["rows"] if r["kind"] == "cudagraph"]
    key = "c9" * (KEY_CHARS // 2)
    with open(os.path.join(CASES, "cudagraph_replay.py"), encoding="utf-8") as fh:
        source = fh.read()
    app.extensions["torchbolt.runs"].store.put(key, source, {"device": "cuda"}, result)
    open_page(page, f"{live_server}/r/{key}")
    page.select_option(f"{pane(page, 1)} .pane-stage", "timings")
    row = f'{pane(page, 1)} .attribution tr[data-kernel="{replay["kernel"]}"]'
    page.wait_for_selector(row)
    assert page.locator(f"{row} .kernel-link").all_inner_texts() == [
        s["name"] for s in replay["source"]]
    page.click(f"{row} .replay-inside summary")
    inside = page.inner_text(f"{row} .replay-inside")
    assert all(k["kernel"] in inside for k in replay["inside"])
    shot(page, "attribution_cudagraph_replay")
