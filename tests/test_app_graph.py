"""Graph views without the engine: the FX text parser, layouts, collapsing, the share store."""

from __future__ import annotations

import pytest

from compiler_core.present import layout
from compiler_core.parsers.fxgraph import fx_nodes, parse_type
from app.graphview import graph_view
from compiler_core.present.modulegroups import ModuleTree
from app.store import Store, content_key, is_key
from compiler_core.report.stored import expand_result

AOT_TEXT = '''class GraphModule(torch.nn.Module):
    def forward(
        self,
        primals_1: "f32[8, 16][16, 1]cpu",  # PlainAOTInput(idx=0)
        primals_2: "f32[16][1]cpu",  # PlainAOTInput(idx=1)
    ):
        # File: /tmp/x/main.py:12 in f, code: y = torch.sin(x) * 2
        sin: "f32[8, 16][16, 1]cpu" = torch.ops.aten.sin.default(primals_1)
        mul: "f32[8, 16][16, 1]cpu" = torch.ops.aten.mul.Tensor(sin, primals_2);  sin = None
        var_mean = torch.ops.aten.var_mean.correction(mul, [1], correction = 0, keepdim = True)
        getitem: "f32[8, 1][1, 1]cpu" = var_mean[0];  var_mean = None
        return (
            mul,  # PlainAOTOutput(idx=0)
            getitem,
        )
'''
SRC_LINES = [None] * 6 + [12] * 6 + [None] * 4


def test_parse_aot_graph():
    nodes = {n["name"]: n for n in fx_nodes(AOT_TEXT, SRC_LINES)}
    assert list(nodes) == ["primals_1", "primals_2", "sin", "mul", "var_mean", "getitem", "output"]
    assert nodes["primals_1"]["op"] == "placeholder" and nodes["primals_1"]["shape"] == ["8", "16"]
    assert nodes["mul"] == {**nodes["mul"], "target": "aten.mul.Tensor", "dtype": "float32",
                            "inputs": ["sin", "primals_2"], "line": 12}
    assert nodes["getitem"]["target"] == "getitem" and nodes["getitem"]["inputs"] == ["var_mean"]
    assert nodes["output"]["inputs"] == ["mul", "getitem"]


def test_sections_are_separate_graphs_and_pytree_inputs_are_leaves():
    text = ('# ===== forward =====\nclass inner_f(torch.nn.Module):\n'
            '    def forward(self, primals, tangents):\n'
            '        primals_1: "f32[4][1]cpu"  # PlainAOTInput(idx=0)\n'
            '        primals_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)\n'
            '        cos: "f32[4][1]cpu" = torch.ops.aten.cos.default(primals_1)\n'
            '        return pytree.tree_unflatten([cos], self._out_spec)\n\n'
            '# ===== backward =====\nclass GraphModule(torch.nn.Module):\n'
            '    def forward(self, tangents_1: "f32[4][1]cpu"):\n'
            '        neg: "f32[4][1]cpu" = torch.ops.aten.neg.default(tangents_1)\n'
            '        return (neg,)\n')
    nodes = fx_nodes(text, [])
    assert [n["id"] for n in nodes] == ["forward:primals_1", "forward:cos", "forward:output",
                                        "backward:tangents_1", "backward:neg", "backward:output"]
    assert nodes[0]["op"] == "placeholder" and nodes[0]["shape"] == ["4"]
    assert nodes[4]["inputs"] == ["backward:tangents_1"]


@pytest.mark.parametrize("text,expected", [
    ("f32[8, 16][16, 1]cpu", (["8", "16"], "float32")),
    ("b8[s0][1]cuda:0", (["s0"], "bool")),
    ("Sym(s77)", (None, "Sym")),
    (None, (None, None)),
])
def test_parse_type(text, expected):
    assert parse_type(text) == expected


def chain(n: int, modules: int = 0) -> list[dict]:
    """A chain with a skip connection every 7 nodes, like a stack of residual blocks; with
    `modules`, node i sits in layers.(i * modules // n).op(i % 3), as nn_module_stack says."""
    nodes = []
    for i in range(n):
        inputs = [f"n{i - 1}"] if i else []
        if i % 7 == 0 and i >= 7:
            inputs.append(f"n{i - 7}")
        layer = f"L['self'].layers.{i * modules // n}"
        stack = [["L['self'].layers", "ModuleList"], [layer, "Block"],
                 [f"{layer}.op{i % 3}", "Linear"]] if modules else []
        nodes.append({"id": f"n{i}", "name": f"n{i}", "op": "call_function", "target": "add",
                      "shape": None, "dtype": None, "line": None, "graph": "",
                      "module": stack[-1][0] if stack else None, "modules": stack, "inputs": inputs})
    return nodes


def overlaps(a: dict, b: dict) -> bool:
    return (abs(a["x"] - b["x"]) < (a["w"] + b["w"]) / 2 - 0.5
            and abs(a["y"] - b["y"]) < (a["h"] + b["h"]) / 2 - 0.5)


@pytest.mark.parametrize("use_dot", [True, False])
def test_layouts_put_inputs_above_outputs_and_boxes_apart(monkeypatch, use_dot):
    if not use_dot:
        monkeypatch.setattr(layout.shutil, "which", lambda name: None)
    elif layout.shutil.which("dot") is None:
        pytest.skip("Graphviz dot is not installed")
    nodes = chain(60)
    view = graph_view(compiled(nodes), "dynamo_graph", {}, "off")
    assert view["engine"] == ("dot" if use_dot else "layered") and len(view["nodes"]) == 60
    rows = view["nodes"]
    assert all(rows[a]["y"] < rows[b]["y"] for a, b, _ in view["edges"])  # y grows downwards
    assert not any(overlaps(a, b) for i, a in enumerate(rows) for b in rows[i + 1:])
    if use_dot:  # every edge routed, ending at its arrow's tip on the target's top side
        for a, b, route in view["edges"]:
            tip = route[-2:]
            assert abs(tip[1] - (rows[b]["y"] - rows[b]["h"] / 2)) < 2, (route, rows[b])


def test_module_groups_collapse_expand_and_hide():
    nodes = chain(3000, modules=40)
    tree = ModuleTree(nodes)
    assert tree.top == ["L['self'].layers"] and len(tree.groups["L['self'].layers"].children) == 40
    assert tree.groups["L['self'].layers.3"].children == [
        f"L['self'].layers.3.op{i}" for i in (0, 1, 2)]
    expanded = graph_view(compiled(nodes), "dynamo_graph", {}, "off")
    assert expanded["engine"] == "layered" and len(expanded["nodes"]) == 3000
    assert expanded["hidden"] == [] and expanded["boxes"] == []  # no boxes without dot
    assert len(graph_view(compiled(nodes), "dynamo_graph", {}, 2)["nodes"]) == 40  # one per layer
    coarse = graph_view(compiled(nodes), "dynamo_graph", {}, 1)
    assert [(n["kind"], n["size"]) for n in coarse["nodes"]] == [("group", 3000)]
    assert coarse["edges"] == [] and len(coarse["hidden"]) == 3000
    assert coarse["hidden"][80]["chain"] == ["L['self'].layers", "L['self'].layers.1",
                                             "L['self'].layers.1.op2"]
    one = graph_view(compiled(nodes), "dynamo_graph", {},
                     expand=["L['self'].layers", "L['self'].layers.1"])
    shown = {n["id"] for n in one["nodes"]}
    assert "L['self'].layers.1.op2" in shown and "L['self'].layers.2" in shown
    assert one["engine"] == "dot" or layout.shutil.which("dot") is None
    assert {b["id"] for b in one["boxes"]} <= {"L['self'].layers", "L['self'].layers.1"}


def test_collapsed_cycles_still_lay_out(monkeypatch):
    monkeypatch.setattr(layout.shutil, "which", lambda name: None)
    nodes = chain(6)
    for node, module in zip(nodes, ["A", "A", "B", "B", "A", "A"]):
        node["modules"] = [[module, "Linear"]]
    view = graph_view(compiled(nodes), "dynamo_graph", {}, 1)
    assert {n["id"] for n in view["nodes"]} == {"A", "B"}
    assert sorted((view["nodes"][a]["id"], view["nodes"][b]["id"]) for a, b, _ in view["edges"]) == [
        ("A", "B"), ("B", "A")]


def compiled(nodes):
    """A compile holding one Dynamo graph stage with this node table."""
    keep = ("id", "graph")
    stage = {"stage": "dynamo_graph", "compile_id": "0/0", "text": "", "src_lines": [],
             "nodes": [{k: v for k, v in n.items() if k not in keep} for n in nodes]}
    return {"id": "0/0", "stages": {"dynamo_graph": stage}, "kernels": []}


def test_store_round_trip_and_keys(tmp_path):
    key = content_key("print(1)", {"device": "cpu"}, "torch 2.13")
    assert is_key(key) and key != content_key("print(1)", {"device": "cuda"}, "torch 2.13")
    Store(str(tmp_path)).put(key, "print(1)", {"device": "cpu"}, {"compiles": [], "error": None})
    source, options, blob = Store(str(tmp_path)).row(key)
    assert (source, options) == ("print(1)", {"device": "cpu"})
    assert expand_result(blob) == {"compiles": [], "error": None}
    assert Store(str(tmp_path)).row("0" * 20) is None and not is_key("../../etc")
