"""The page while a run goes and around it, in headless Chromium: a live run's compile rows and
menus (a method named by its class, the Kernels stage the result builds), and the environment
picker with an environment whose start-up probe failed."""

from __future__ import annotations

import json
import re

from test_browser import BREAK, open_page, page, pane, run_script, shot  # noqa: F401 (page: a fixture)

pytest_plugins = ["test_app_fixtures"]

# Compiled as a bound method: Dynamo's frame is Gate.forward in the script, on every torch.
GATE = """import torch


class Gate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.sigmoid(self.proj(x)) * x  # the live-run test's own code


step = torch.compile(Gate().forward)
step(torch.randn(4, 8))
"""


def test_a_live_run_names_the_method_by_its_class_and_lists_the_kernels_stage(page, live_server):
    open_page(page, live_server + "/")
    if page.is_checked("#options [name=measure]"):
        page.click("#options [name=measure]")
    run_script(page, GATE)
    assert "Done in" in page.text_content(".run-status")  # ran live, not from the store
    row = page.locator(".compile-row[data-compile='0/0']")
    assert row.locator(".frame").inner_text() == "Gate.forward line 9"
    assert page.locator(f"{pane(page, 0)} .pane-compile option").all_inner_texts() == ["0/0 Gate.forward"]
    chips = row.locator(".chip.stage").all_inner_texts()
    timed = re.compile(r"Dynamo graph \(Torch IR\) \d+\.\d\ds")  # with the time its event came
    assert any(timed.fullmatch(chip) for chip in chips), chips
    assert "Kernels" in chips, chips  # built with the result, no event announces it: no time
    row.locator(".chip.stage", has_text="Kernels").click()
    page.wait_for_selector(f"{pane(page, 0)}[data-stage=kernels] .kernel-list")
    shot(page, "live_run_method_and_kernels_chip")


def with_a_newer_stage(route):
    """The job's real event stream (whole: fetched once the job ended) with one stage event the
    page's catalogue does not list, as a newer engine's stage would come, after its first one."""
    events = route.fetch().text().split("\n\n")
    first = next(i for i, block in enumerate(events) if "event: stage" in block)
    newer = {"type": "stage", "compile_id": "0/0", "stage": "newer_ir", "t": 0.5}
    events.insert(first + 1, f"event: stage\ndata: {json.dumps(newer)}")
    route.fulfill(status=200, headers={"Content-Type": "text/event-stream"}, body="\n\n".join(events))


def test_live_markers_are_told_from_stages_by_their_marker_field(page, live_server):
    page.route("**/api/jobs/*/events", with_a_newer_stage)
    open_page(page, live_server + "/")
    if page.is_checked("#options [name=measure]"):
        page.click("#options [name=measure]")
    run_script(page, BREAK + "# the live-marker test's own run\n")
    assert "Done in" in page.text_content(".run-status")  # ran live: its events came
    markers = page.locator(".compile-row .chip.marker").all_inner_texts()
    assert markers and all(chip.startswith("⚠ graph break") for chip in markers), markers
    newer = page.locator(".compile-row[data-compile='0/0'] .chip.stage", has_text="newer_ir")
    assert newer.get_attribute("class").split() == ["chip", "stage"]  # a stage, if unknown here
    assert page.locator("body[data-run=finished]").count() == 1


def test_an_unavailable_environment_is_listed_with_why_and_cannot_be_chosen(page, live_server):
    why = "JobFailed: the job process died before the script started (exit 1)"
    python = "/opt/envs/torch-2.13/bin/python"

    def status_with_a_failed_probe(route):
        status = route.fetch().json()
        status["unavailable"] = [{"id": None, "torch": None, "triton": None, "device": None,
                                  "device_name": None, "workers": 1, "python": python, "error": why}]
        route.fulfill(json=status)

    page.route("**/api/status", status_with_a_failed_probe)
    open_page(page, live_server + "/")
    picker = page.wait_for_selector("#environment")
    environments = json.loads(page.evaluate("fetch('/api/status').then((r) => r.text())"))
    options = page.locator("#environment option")
    assert options.count() == len(environments["environments"]) + 1
    failed = page.locator("#environment option[disabled]")
    assert failed.inner_text() == f"⚠ torch-2.13 unavailable: {why}"  # its venv's folder
    assert python in failed.get_attribute("title") and why in failed.get_attribute("title")
    assert picker.evaluate("(select) => select.options[select.selectedIndex]?.disabled") in (False, None)
    assert page.locator("#compare-environments").count() == (len(environments["environments"]) > 1)
    shot(page, "environment_unavailable")


def test_the_next_runs_output_opens_at_its_top(page, live_server):
    output = ".tab-panel.output"
    open_page(page, live_server + "/")
    run_script(page, "for i in range(80):\n    print('first run', i)\n")
    page.click("[data-tab=output]")
    page.eval_on_selector(output, "(panel) => { panel.scrollTop = 400; }")  # read to its end
    page.click("[data-tab=compiles]")
    run_script(page, "for i in range(80):\n    print('second run', i)\n")
    page.click("[data-tab=output]")
    assert page.eval_on_selector(output, "(panel) => panel.scrollTop") == 0  # stdout first
    assert page.eval_on_selector(output, "(panel) => panel.scrollHeight > panel.clientHeight + 400")
