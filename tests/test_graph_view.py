"""The graph view on a real compile of the gallery's tiny transformer block (CPU): module-scope
groups from the recorded nn_module_stack, kernel and timing overlays, and in Chromium: opening a
group, arrows, labels that do not overlap, search, and a click that opens the node's kernel."""

from __future__ import annotations

import json

import pytest

from compiler_core.gallery import get_example
from test_browser import open_page, page, pane, shot  # noqa: F401 (page is a fixture)

pytest_plugins = ["test_app_fixtures"]

BLOCK = get_example("transformer_block")
ROOT_GROUPS = {"L['self'].ln1", "L['self'].qkv", "L['self'].proj", "L['self'].ln2", "L['self'].mlp"}


@pytest.fixture(scope="module")
def block(compiled):
    job = compiled(BLOCK.source)
    assert job["result"]["error"] is None
    return job


def view(client, job, stage, **params):
    query = {"compile": "0/0", "stage": stage, **params}
    response = client.get(f"/api/results/{job['key']}/graph", query_string=query)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_module_stacks_are_recorded_for_dynamo_and_post_grad_nodes(block):
    stages = block["result"]["compiles"][0]["stages"]
    dynamo = {n["name"]: n for n in stages["dynamo_graph"]["nodes"]}
    assert dynamo["layer_norm"]["modules"] == [["L['self'].ln1", "LayerNorm"]]
    assert dynamo["input_1"]["modules"] == [["L['self'].mlp", "Sequential"], ["L['self'].mlp.0", "Linear"]]
    assert dynamo["scores"]["modules"] == []  # Block.forward's own code: no submodule
    post = stages["post_grad_graph"]["modules"]
    assert post["var_mean"] == [["L['self'].ln1", "LayerNorm"]]
    assert post["erf"] == [["L['self'].mlp", "Sequential"], ["L['self'].mlp.1", "GELU"]]
    assert "bmm" not in post  # attention ops are written in Block.forward itself


def test_post_grad_groups_hold_their_module_nodes(client, block):
    closed = view(client, block, "post_grad_graph", collapse="1")
    groups = {n["id"]: n for n in closed["nodes"] if n["kind"] == "group"}
    assert set(groups) == ROOT_GROUPS
    assert groups["L['self'].ln1"]["name"] == "ln1 · LayerNorm"
    hidden = {n["name"]: n["chain"] for n in closed["hidden"]}
    assert hidden["var_mean"] == hidden["rsqrt"] == ["L['self'].ln1"]
    assert hidden["erf"] == ["L['self'].mlp", "L['self'].mlp.1"]
    assert {"bmm", "amax", "exp"} <= {n["name"] for n in closed["nodes"]}  # outside any module

    mlp = view(client, block, "post_grad_graph", expand=json.dumps(["L['self'].mlp"]))
    children = {n["id"] for n in mlp["nodes"] if n["kind"] == "group"}
    assert children == ROOT_GROUPS - {"L['self'].mlp"} | {f"L['self'].mlp.{i}" for i in range(3)}
    ln1 = view(client, block, "post_grad_graph", expand=json.dumps(["L['self'].ln1"]))
    inside = {n["name"] for n in ln1["nodes"] if n.get("module") == "L['self'].ln1"}
    assert {"var_mean", "rsqrt", "mul_1", "add_1"} <= inside and "L['self'].ln1" not in inside
    assert [b["id"] for b in ln1["boxes"]] == ["L['self'].ln1"]


def test_kernel_overlay_and_measured_share(client, block):
    compile0 = block["result"]["compiles"][0]
    graph = view(client, block, "post_grad_graph", collapse="off")
    names = [k["name"] for k in graph["kernels"]]
    assert names == [k["name"] for k in compile0["kernels"]]
    by_name = {n["name"]: n for n in graph["nodes"]}
    fused = [names[i] for i in by_name["var_mean"]["kernels"]]
    assert fused and all("var_mean" in compile0["kernels"][names.index(k)]["nodes"] for k in fused)
    assert [names[i] for i in by_name["addmm"]["kernels"]] == ["extern_kernels.addmm"]
    measured = [k for k in graph["kernels"] if k["share"] is not None]
    withheld = all(t["kernels"]["totals"]["compiled"].get("withheld")  # a busy machine's profile
                   for t in block["result"]["timings"] if "kernels" in t)
    assert (measured or withheld) and all(0 < k["share"] <= 1 and k["us"] > 0 for k in measured)
    dynamo = {n["name"]: n for n in view(client, block, "dynamo_graph", collapse="off")["nodes"]}
    assert "extern_kernels.bmm" in [names[i] for i in dynamo["matmul"]["kernels"]]


def graph_state(page, index):
    return page.evaluate("""(sel) => {
        const v = document.querySelector(sel + ' .pane-body').graphView;
        return {ids: v.graph.nodes.map((n) => n.id), boxes: v.graph.boxes.map((b) => b.id),
                expanded: [...v.expanded]};
    }""", pane(page, index))


def node_point(page, index, node_id):
    return page.evaluate("""([sel, id]) => {
        const v = document.querySelector(sel + ' .pane-body').graphView;
        return v.canvas.clientPoint(v.graph.nodes.find((n) => n.id === id));
    }""", [pane(page, index), node_id])


def arrow_tips_drawn(page, index):
    """Canvas pixels at the tips of the routed edges on screen: painted, not background."""
    return page.evaluate("""(sel) => {
        const v = document.querySelector(sel + ' .pane-body').graphView, c = v.canvas;
        const ctx = c.canvas.getContext('2d'), ratio = c.size.ratio;
        const out = [];
        for (const [a, b, route] of v.graph.edges) {
            if (!route) continue;
            const [x0, y0] = c.toScreen(route.at(-4), route.at(-3)), [x, y] = c.toScreen(route.at(-2), route.at(-1));
            if (x < 5 || y < 5 || x > c.size.width - 5 || y > c.size.height - 5) continue;
            const back = [x - (x - x0) / Math.hypot(x - x0, y - y0) * 3, y - (y - y0) / Math.hypot(x - x0, y - y0) * 3];
            out.push(ctx.getImageData(Math.round(back[0] * ratio), Math.round(back[1] * ratio), 1, 1).data[3]);
        }
        return out;
    }""", pane(page, index))


def label_boxes(page, index):
    return page.evaluate("""(sel) => [...document.querySelectorAll(sel + ' .graph-label')]
        .map((el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom, el.textContent]; })""",
                         pane(page, index))


def test_browser_groups_arrows_labels_search_and_kernel(page, live_server, block):  # noqa: F811
    settings = {"paneCount": 2, "panes": [
        {"compile": "0/0", "stage": "post_grad_graph", "view": "graph", "collapse": "1"},
        {"compile": "0/0", "stage": "output_code", "view": "text"},
        {"compile": "0/0", "stage": "metrics", "view": "text"}]}
    page.add_init_script(f"localStorage.setItem('torchbolt.settings.v1', {json.dumps(json.dumps(settings))})")
    open_page(page, f"{live_server}/r/{block['key']}")
    graph = f"{pane(page, 0)} .pane-body"
    page.wait_for_selector(f"{graph}[data-ready]")
    assert ROOT_GROUPS <= set(graph_state(page, 0)["ids"])

    page.mouse.click(*node_point(page, 0, "L['self'].ln1"))  # open the group
    page.wait_for_function("(sel) => document.querySelector(sel).graphView.graph.boxes.length === 1", arg=graph)
    state = graph_state(page, 0)
    assert state["boxes"] == ["L['self'].ln1"] and "var_mean" in state["ids"]
    page.mouse.move(*node_point(page, 0, "var_mean"))
    card = page.wait_for_selector(f"{pane(page, 0)} .graph-card:not([hidden])").inner_text()
    assert "target: aten.var_mean.correction" in card and "module: L['self'].ln1" in card
    assert "kernel " in card

    tips = arrow_tips_drawn(page, 0)
    assert len(tips) >= 5 and all(alpha > 0 for alpha in tips), tips
    boxes = label_boxes(page, 0)
    assert len(boxes) >= 10 and any("ln1 · LayerNorm" in b[4] for b in boxes)
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            overlap_x = min(a[2], b[2]) - max(a[0], b[0])
            overlap_y = min(a[3], b[3]) - max(a[1], b[1])
            assert overlap_x <= 0.5 or overlap_y <= 0.5, (a, b)
    shot(page, "graph_post_grad_ln1_open")

    kernels = block["result"]["compiles"][0]["kernels"]
    expected = next(k["name"] for k in kernels if "var_mean" in k["nodes"])
    page.mouse.click(*node_point(page, 0, "var_mean"))
    page.wait_for_selector(f"{pane(page, 1)}[data-stage=kernels]")
    assert page.get_attribute(pane(page, 1), "data-kernel") == expected
    assert f"===== {expected} (" in page.inner_text(f"{pane(page, 1)} .cm-content")
    shot(page, "graph_click_opens_kernel")

    page.fill(f"{pane(page, 0)} .graph-search", "rsqrt")
    assert page.inner_text(f"{pane(page, 0)} .graph-count") == "2 matches"  # ln1's and ln2's
    page.press(f"{pane(page, 0)} .graph-search", "Enter")
    page.press(f"{pane(page, 0)} .graph-search", "Enter")  # the second lives in closed ln2
    page.wait_for_function("(sel) => document.querySelector(sel).graphView.expanded.has(\"L['self'].ln2\")",
                           arg=graph)
    assert "rsqrt_1" in graph_state(page, 0)["ids"]
    assert page.inner_text(f"{pane(page, 0)} .graph-count") == "2 of 2"
    shot(page, "graph_search_opens_ln2")
