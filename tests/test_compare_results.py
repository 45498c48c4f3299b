"""Two stored results side by side (issue 13, part 3): `/r/KEY1?compare=KEY2` lists the second
result's compiles in the pane menus as "B ..." with its environment, and the diff view marks
what changed between the runs, pane against pane."""

from __future__ import annotations

from test_browser import open_page, page, pane, shot  # noqa: F401 (page: a fixture)

pytest_plugins = ["test_app_fixtures"]

BEFORE = '''import torch


def f(x):
    return torch.relu(x) * 2


torch.compile(f, backend="eager")(torch.ones(4))
'''
AFTER = BEFORE.replace("* 2", "* 3")


def test_a_second_result_diffs_pane_against_pane(page, live_server, compiled):
    before = compiled(BEFORE, device="cpu", measure=False)
    after = compiled(AFTER, device="cpu", measure=False)
    assert before["key"] != after["key"]
    open_page(page, f"{live_server}/r/{before['key']}?compare={after['key']}")
    page.wait_for_selector(f"body[data-compare='{after['key']}']")

    labels = page.locator(f"{pane(page, 1)} .pane-compile option").all_inner_texts()
    env = after["result"]["environment"]
    other = next(label for label in labels if label.startswith("B 0/0"))
    assert f"torch {env['torch']}, CPU" in other and "f" in other, labels
    page.select_option(f"{pane(page, 0)} .pane-compile", "0/0")
    page.select_option(f"{pane(page, 1)} .pane-compile", "B 0/0")
    assert page.get_attribute(f"{pane(page, 1)} .pane-compile", "title") == other  # the menu cuts it
    for index in (0, 1):
        page.select_option(f"{pane(page, index)} .pane-stage", "dynamo_graph")
    page.select_option(f"{pane(page, 1)} .pane-diff", "0")

    page.wait_for_selector(f"{pane(page, 1)} .cm-line.tb-diff-new")
    new = page.locator(f"{pane(page, 1)} .cm-line.tb-diff-new").all_inner_texts()
    old = page.locator(f"{pane(page, 0)} .cm-line.tb-diff-old").all_inner_texts()
    assert any("mul" in line and "3" in line for line in new), new  # B's graph: * 3
    assert any("mul" in line and "2" in line for line in old), old  # this run's: * 2
    assert not [line for line in new + old if "= torch.relu(l_x_)" in line]  # the same in both runs
    shot(page, "compare_two_results")

    page.click("#gallery-button")
    page.click("#stop-compare")
    labels = page.locator(f"{pane(page, 1)} .pane-compile option").all_inner_texts()
    assert labels and not any(label.startswith("B ") for label in labels), labels
