"""Graphs kept in step across stages: a node selected in one graph view marks what it became in
the others (Dynamo -> AOT -> post-grad) and its kernels, and back, on real CPU compiles of the
gallery's MLP (forward only) and training step (forward and a lazily compiled backward)."""

from __future__ import annotations

import os

import pytest

from compiler_core import graph_view
from compiler_core.gallery import get_example
from compiler_core.parsers.nodelinks import post_grad_origins

pytest_plugins = ["test_app_fixtures"]

ARTIFACTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "test-artifacts")


@pytest.fixture(scope="module")
def mlp(compiled):
    return compiled(get_example("mlp_fusion").source, device="cpu", measure=False, views=False)


@pytest.fixture(scope="module")
def training(compiled):
    return compiled(get_example("training_step").source, device="cpu", measure=False, views=False)


def views(job) -> dict:
    """Stage -> {node id: node row} of the first compile's graph views (hidden nodes too), each
    row with the names of its kernels (`kernel_names`)."""
    result = job["result"]
    compiled = result["compiles"][0]
    out = {}
    for stage in ("dynamo_graph", "aot_forward", "aot_backward", "aot_joint", "post_grad_graph"):
        if stage in compiled["stages"]:
            view = graph_view(compiled, stage, result)
            names = [kernel["name"] for kernel in view["kernels"]]
            out[stage] = {n["id"]: {**n, "kernel_names": {names[i] for i in n.get("kernels", [])}}
                          for n in view["nodes"] + view["hidden"]}
    return out


def by_target(nodes: dict, text: str, graph: str | None = None) -> list[dict]:
    return [n for key, n in nodes.items() if text in (n.get("target") or "")
            and (graph is None or key.startswith(f"{graph}:"))]


def test_mlp_dynamo_gelu_maps_to_its_aten_nodes_and_kernel_and_back(mlp):
    graphs = views(mlp)
    dynamo, post = graphs["dynamo_graph"], graphs["post_grad_graph"]
    (gelu,) = by_target(dynamo, "gelu")
    (erf,) = by_target(post, "aten.erf")
    assert erf["dynamo"] == [gelu["name"]]  # the post-grad erf came from Dynamo's gelu
    became = {post[key.split(":", 1)[1]]["target"] for key in gelu["post"]}  # one graph: bare ids
    assert "aten.erf.default" in became and not any("addmm" in t for t in became)
    (kernel,) = gelu["kernel_names"]
    assert "gelu" in kernel and erf["kernel_names"] == {kernel}
    # every post-grad node of the GELU kernel leads back to the same Dynamo node
    fused = [n for n in post.values() if kernel in n["kernel_names"]]
    assert len(fused) >= 3 and all(n["dynamo"] == [gelu["name"]] for n in fused)
    # the AOT forward node is the post-grad node of the same name, with its links
    aot_erf = graphs["aot_forward"][erf["id"]]
    assert aot_erf["post"] == [f"forward:{erf['name']}"]
    assert aot_erf["dynamo"] == [gelu["name"]]
    assert aot_erf["kernel_names"] == {kernel}


def test_mlp_linear_decomposes_into_permute_and_addmm(mlp):
    dynamo = views(mlp)["dynamo_graph"]
    first = next(n for n in by_target(dynamo, "linear") if n["post"])
    targets = sorted(key.split(":", 1)[1].rstrip("_0123456789") for key in first["post"])
    assert targets == ["addmm", "permute"]
    assert first["kernel_names"] == {"extern_kernels.addmm"}
    placeholder = next(n for n in dynamo.values() if n["op"] == "placeholder")
    assert placeholder["post"] == []  # an input: no later node comes from it


def test_training_relu_reaches_forward_and_backward_and_back(training):
    graphs = views(training)
    dynamo, post = graphs["dynamo_graph"], graphs["post_grad_graph"]
    (relu,) = by_target(dynamo, "relu")
    (forward_relu,) = by_target(post, "aten.relu", "forward")
    (where,) = by_target(post, "aten.where", "backward")
    assert {forward_relu["id"], where["id"]} <= set(relu["post"])  # ids are `graph:name` here
    assert forward_relu["dynamo"] == where["dynamo"] == [relu["name"]]
    kernels = relu["kernel_names"]
    assert any("relu" in k for k in kernels) and any("threshold_backward" in k for k in kernels)
    assert where["kernel_names"] == {k for k in kernels if "threshold_backward" in k}
    # the AOT backward graph's `where` is the post-grad one; the joint graph's feeds both graphs
    aot_where = graphs["aot_backward"][where["name"]]
    assert aot_where["post"] == [where["id"]] and aot_where["dynamo"] == [relu["name"]]
    joint_relu = graphs["aot_joint"][forward_relu["name"]]
    assert set(joint_relu["post"]) == {forward_relu["id"], f"backward:{forward_relu['name']}"}


def test_training_backward_kernels_have_their_nodes(training):
    """Torch 2.13 leaves the lazily compiled backward's provenance mapping empty; the kernels'
    nodes come from the lines Inductor wrote for them, their Dynamo nodes from autograd seq_nr."""
    compiled = training["result"]["compiles"][0]
    backward = [k for k in compiled["kernels"] if k["graph"] == "backward" and k["kind"] == "cpp"]
    assert backward and all(k["nodes"] for k in backward)
    origins = compiled["stages"]["post_grad_graph"]["origins"]
    dynamo = {n["name"] for n in compiled["stages"]["dynamo_graph"]["nodes"]}
    for kernel in backward:
        assert all(set(origins[f"backward:{n}"]) <= dynamo for n in kernel["nodes"]), kernel["name"]


def test_origins_fall_back_to_seq_nr_for_ops_and_the_saved_name_for_inputs():
    origins = post_grad_origins(
        ["forward", "backward"],
        [{"relu": ["relu_1"], "mm": ["linear"], "full": ["sum_1"], "addmm": ["linear_2"]}, {}],
        [{"primals_1": None, "relu": 3, "mm": 2, "mul": 9, "full": 8, "addmm": -1},
         {"relu": None, "tangents_1": None, "le": 3, "mm_1": 2, "full": 3, "neg": 7, "add": -1}])
    assert origins["backward:relu"] == ["relu_1"]  # the input is the saved forward `relu`
    assert origins["backward:le"] == ["relu_1"] and origins["backward:mm_1"] == ["linear"]
    assert origins["backward:full"] == ["relu_1"]  # by its seq_nr, not the forward's `full`
    unlinked = {"backward:tangents_1", "backward:neg", "forward:mul", "forward:primals_1",
                "backward:add"}  # seq_nr -1: traced without autograd, as inference graphs are
    assert not unlinked & set(origins)
    assert post_grad_origins(["forward"], [{"a": "x", 3: ["y"], "b": [1]}], [["z"]]) == {}


# ---------------------------------------------------------------- in the browser

def test_selecting_a_node_marks_its_counterparts_in_the_other_graph(browser, live_server, training):
    graphs = views(training)
    (relu,) = by_target(graphs["dynamo_graph"], "relu")
    (where,) = by_target(graphs["post_grad_graph"], "aten.where", "backward")
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    problems = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.set_default_timeout(30_000)
    page.goto(f"{live_server}/r/{training['key']}")
    page.wait_for_selector("body[data-ready]")
    for index, stage in ((0, "dynamo_graph"), (1, "post_grad_graph")):
        pane = f".pane[data-index='{index}']"
        page.select_option(f"{pane} .pane-stage", stage)
        page.click(f"{pane} .segmented button:has-text('Graph')")
        page.wait_for_selector(f"{pane} .pane-body[data-ready]")

    def click(index, node_id):
        x, y = page.evaluate("""([index, id]) => {
            const view = document.querySelector(`.pane[data-index='${index}'] .pane-body`).graphView;
            const node = view.graph.nodes.find((n) => n.id === id);
            view.canvas.focus(node);  // in view, as a user would scroll to it
            view.canvas.draw();
            return view.canvas.clientPoint(node);
        }""", [index, node_id])
        page.mouse.click(x, y)

    def marked(index):
        return page.evaluate("""(index) => {
            const view = document.querySelector(`.pane[data-index='${index}'] .pane-body`).graphView;
            const { linked, selected, focused } = view.canvas;
            return {linked: [...linked].map((n) => n.id), selected: selected?.id ?? null,
                    focused: focused?.id ?? null, note: view.note.textContent};
        }""", index)

    click(0, relu["id"])
    right = marked(1)
    assert sorted(right["linked"]) == sorted(relu["post"])  # forward relu, backward le/where ...
    assert right["focused"] in right["linked"]  # the first counterpart is centred
    sections = f"(forward 1, backward {len(relu['post']) - 1})"  # relu; the backward's le, where ...
    assert right["note"].startswith(f"{len(relu['post'])} nodes here came from {relu['name']} "
                                    f"(Dynamo graph (Torch IR)) {sections}"), right["note"]
    assert marked(0)["selected"] == relu["id"]
    page.screenshot(path=os.path.join(ARTIFACTS, "graph_sync_dynamo_to_post_grad.png"))

    page.focus(".pane[data-index='1'] .graph-canvas")
    page.keyboard.press("]")
    second = marked(1)["focused"]
    assert second in right["linked"] and second != right["focused"]

    click(1, where["id"])  # and back: the backward `where` came from Dynamo's relu
    left = marked(0)
    assert left["linked"] == [relu["id"]] and marked(1)["selected"] == where["id"]
    assert left["note"].startswith(f"{where['name']} (Inductor post-grad graph) came from 1 node here")
    page.screenshot(path=os.path.join(ARTIFACTS, "graph_sync_post_grad_to_dynamo.png"))

    page.keyboard.press("Escape")
    assert marked(0)["linked"] == [] and page.is_hidden(".pane[data-index='0'] .graph-sync")

    # a line of a kernel in the Kernels stage marks the nodes the kernel came from
    (kernel,) = [k for k in training["result"]["compiles"][0]["kernels"]
                 if "threshold_backward" in k["name"]]
    page.select_option(".pane[data-index='1'] .pane-stage", "kernels")
    page.click(f".pane[data-index='1'] li[data-kernel='{kernel['label']}'] .kernel-jump")
    page.locator(f".pane[data-index='1'] .cm-line:has-text('===== {kernel['name']} (') "
                 "~ .cm-line:has-text('void kernel(')").first.click()  # C++ kernels are `kernel`
    left = marked(0)
    assert left["linked"] == [relu["id"]], left
    assert left["note"].startswith(f"1 node here went into {kernel['label']}")
    page.screenshot(path=os.path.join(ARTIFACTS, "graph_sync_kernel_to_dynamo.png"))

    # a graph opened afterwards (another stage in that pane) marks the same selection
    page.select_option(".pane[data-index='1'] .pane-stage", "aot_backward")
    page.click(".pane[data-index='1'] .segmented button:has-text('Graph')")
    page.wait_for_selector(".pane[data-index='1'] .pane-body[data-ready]")
    backward = graphs["aot_backward"]
    expected = [n["id"] for n in backward.values() if kernel["name"] in n["kernel_names"]]
    assert expected and sorted(marked(1)["linked"]) == sorted(expected)  # le, where
    page.close()
    assert not problems
