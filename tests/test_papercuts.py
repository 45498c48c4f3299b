"""Papercuts a new user hit (issue 11, item 10), each on the real app."""

from __future__ import annotations

import re

import pytest

from compiler_core import Options
from test_browser import (  # noqa: F401 (page: a fixture)
    cancel_a_long_run, open_page, page, pane, run_script)

TABULAR = '''import torch


def backend(gm, example_inputs):
    gm.graph.print_tabular()
    return gm.forward


torch.compile(lambda x: x.sin() + 1, backend=backend)(torch.ones(3))
'''


def test_the_output_so_far_is_in_the_partial_result_and_kept_on_cancel(worker):
    """What the script printed shows while it runs, and a cancel keeps it (it was lost)."""
    import threading
    import time

    from compiler_core import Job
    job = Job("import time\nprint('before the wait', flush=True)\ntime.sleep(60)\n",
              Options(device="cpu", timeout=30))
    runner = threading.Thread(target=worker.execute, args=(job,))
    runner.start()
    deadline = time.monotonic() + 60
    while "before the wait" not in ((job.partial_result() or {}).get("stdout") or ""):
        assert time.monotonic() < deadline, job.partial_result()
        time.sleep(0.1)
    job.cancel()
    runner.join(60)
    assert job.result["error"]["type"] == "Cancelled"
    assert job.result["stdout"] == "before the wait\n"


def test_print_tabular_works_in_a_job(worker):
    result = worker.run(TABULAR, Options(device="cpu"))
    assert result["error"] is None, result["error"]
    assert "opcode" in result["stdout"] and "call_function" in result["stdout"]


# ---------------------------------------------------------------- the page
pytest_plugins = ["test_app_fixtures"]
SMALL = "import torch\n\n\ndef f(x):\n    return x.sin() + 1\n\n\ntorch.compile(f)(torch.ones(4))\n"
ONE_ROW_PX = 50  # the toolbar is 39 px on one line, 72 px on two (measured at 1920 and 1280 px)


def toast_text(page):
    page.wait_for_selector("#toast:not([hidden])")
    return page.inner_text("#toast")


def test_escape_closes_the_examples_menu(page, live_server):
    open_page(page, live_server + "/")
    page.click("#gallery-button")
    assert page.is_visible("#gallery-menu")
    page.keyboard.press("Escape")
    assert page.is_hidden("#gallery-menu")


def test_a_cancelled_run_says_cancelled_not_failed(page, live_server):
    cancel_a_long_run(page, live_server)
    badge = page.locator(".run-status .badge")
    assert badge.text_content() == "cancelled"
    assert badge.get_attribute("class") == "badge cancelled"
    run_script(page, "raise ValueError('mine')\n")  # a later failure is a failure again
    assert badge.text_content() == "failed"


def test_escape_right_after_ctrl_enter_cancels_the_run_being_submitted(page, live_server):
    open_page(page, live_server + "/")  # a first visit: its lesson's run may still be going
    page.click(".cm-content")
    page.keyboard.press("Control+A")
    page.keyboard.insert_text("import time\n\ntime.sleep(60)\n")
    page.keyboard.press("Control+Enter")
    page.keyboard.press("Escape")  # before the server answered the submit
    page.wait_for_selector("#run[data-status=failed]", timeout=20_000)
    assert page.text_content(".run-status .badge") == "cancelled"


def test_stage_menus_list_only_this_compiles_stages(page, live_server, compiled):
    job = compiled(SMALL, device="cpu", backend="eager")  # no kernels: pane 1 asks for them
    result = job["result"]
    (compile,) = result["compiles"]
    present = set(compile["stages"]) | ({"timings"} if result.get("timings") else set())
    open_page(page, f"{live_server}/r/{job['key']}")
    menus = [page.eval_on_selector_all(f"{pane(page, i)} .pane-stage option",
                                       "(os) => os.map((o) => [o.value, o.textContent, o.selected])")
             for i in (0, 1)]
    assert {value for value, _, _ in menus[0]} == present
    assert not [text for _, text, _ in menus[0] if "(none)" in text]
    # Pane 1 is set to the kernels this compile lacks: it shows the first default stage it has
    # (the AOT forward graph neither: an eager backend), and its menu offers nothing absent.
    assert {value for value, _, _ in menus[1]} == present
    assert [value for value, _, selected in menus[1] if selected] == ["dynamo_graph"]
    assert page.get_attribute(pane(page, 1), "data-stage") == "dynamo_graph"


def test_a_stored_result_lists_its_census_in_stage_order(page, live_server, compiled):
    job = compiled(SMALL, device="cpu", measure=False)
    open_page(page, f"{live_server}/r/{job['key']}")
    census = page.locator(".compile-row .census").first.inner_text().removeprefix("ops: ")
    shown = [re.sub(r" \d+ \(\d+ distinct\)$", "", part) for part in census.split(" → ")]
    menu = page.eval_on_selector_all(f"{pane(page, 0)} .pane-stage option",
                                     "(os) => os.map((o) => o.textContent)")
    assert len(shown) >= 4 and shown == [label for label in menu if label in shown], (shown, menu)


def test_a_view_left_out_offers_to_compile_again_with_it(page, live_server, compiled):
    job = compiled(SMALL, device="cpu", measure=False, views=False)
    open_page(page, f"{live_server}/r/{job['key']}")
    first = pane(page, 0)
    menu = page.eval_on_selector_all(f"{first} .pane-stage option",
                                     "(os) => os.map((o) => [o.value, o.textContent])")
    assert ["core_aten", "Core ATen (view) (off)"] in menu and ["prims", "Prims (view) (off)"] in menu
    page.select_option(f"{first} .pane-stage", "core_aten")
    assert "the 'ATen views' box was off" in page.inner_text(f"{first} .pane-body")
    page.click(f"{first} .run-with")
    page.wait_for_selector("#run[data-status=done]", timeout=120_000)
    assert page.is_checked("#options [name=views]")
    page.wait_for_function(f"document.querySelector(\"{first} .cm-content\")?.textContent"
                           ".includes('torch.ops.aten.sin')")


def test_share_after_an_edit_says_the_code_changed(page, live_server):
    open_page(page, live_server + "/")
    run_script(page, SMALL)
    page.click(".cm-content")
    page.keyboard.press("Control+End")
    page.keyboard.insert_text("# edited\n")
    page.click("#share")
    assert "code changed" in toast_text(page)
    assert page.evaluate("location.pathname") == "/"  # no link to other code than the editor's
    page.click(".cm-content")
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(SMALL)  # the code as it was: its result is shared
    page.click("#share")
    page.wait_for_function("location.pathname.startsWith('/r/')")


@pytest.mark.parametrize("width", [1280, 1600])
def test_the_toolbar_is_one_line_from_1280_px(page, live_server, width):
    page.set_viewport_size({"width": width, "height": 800})
    open_page(page, live_server + "/")
    assert page.locator(".topbar").bounding_box()["height"] < ONE_ROW_PX
    assert page.evaluate("(t => t.scrollWidth <= t.clientWidth)(document.querySelector('.topbar'))")
    assert page.locator("#help").bounding_box()["x"] + 20 <= width  # the last button is on screen
