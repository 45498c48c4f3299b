"""The kernel attribution on the page (issue 44): the headline, the waterfall and the table of
a real result (the job of tests/test_attribution.py, rebuilt from its records with its profiles
taken as not withheld, so that it has rows on a busy machine too), stored and opened by its
share key; a row's line link selects the user's line, its kernel link opens the kernel's source.
"""

from __future__ import annotations

import pytest

from app.store import KEY_CHARS
from test_attribution import GELU_LINE, SCRIPT
from test_browser import open_page, page, pane, shot  # noqa: F401 (page: the fixture)

pytest_plugins = ["test_app_fixtures"]



@pytest.fixture(scope="module")
def attributed(kept_runs):
    return kept_runs(SCRIPT, "attributed.py")


CURSOR_LINE = """() => window.getSelection().anchorNode?.parentElement?.closest('.cm-line')?.textContent"""


def test_the_attribution_shows_what_each_kernel_replaced_with_links(page, live_server, app,
                                                                      attributed):
    _, quiet = attributed
    attribution = quiet["timings"][0]["attribution"]
    key = "a7" * (KEY_CHARS // 2)
    app.extensions["torchbolt.jobs"].store.put(key, SCRIPT, {"device": "cpu"}, quiet)
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
