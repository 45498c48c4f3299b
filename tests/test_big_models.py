"""Big models (issue 14): a compile of torch's own nn.TransformerEncoder names the user's line
that called it and what it runs; Dynamo's long parameter names get module paths; the Core ATen /
prims views are traced only when asked; graph boxes show the short names."""

from __future__ import annotations

import jsonschema
import pytest

from compiler_core.present.graphview import graph_view
from compiler_core.report.conform import SCHEMA
from compiler_core.present.layout import CHAR_W
from compiler_core.parsers.names import short_name, short_names
from conftest import TINY_ENCODER

CALL_LINE = TINY_ENCODER.splitlines().index("out = encoder(torch.randn(2, 4, 16))") + 1


def test_result_validates_against_schema(encoder_result):
    assert encoder_result["error"] is None, encoder_result["error"]
    jsonschema.validate(encoder_result, SCHEMA)


def test_module_compile_names_the_users_call_line_and_the_method(encoder_result):
    compiled = encoder_result["compiles"][0]
    frame = compiled["frame"]
    assert frame["filename"].endswith("torch/_dynamo/external_utils.py")  # Dynamo's wrapper
    assert frame["qualname"] == "TransformerEncoder.forward"
    assert compiled["user_line"] == CALL_LINE


def test_function_compile_names_the_line_calling_it(gallery_results):
    """A function in the user's script: user_line is a line calling something, not its def."""
    from compiler_core import get_example
    checked = 0
    for slug, result in gallery_results.items():
        source = get_example(slug).source.splitlines()
        for compiled in result["compiles"]:
            if compiled["frame"]["filename"] == result["user_file"] and compiled["user_line"]:
                line = source[compiled["user_line"] - 1].strip()
                assert "(" in line and not line.startswith("def "), (slug, line)
                checked += 1
    assert checked >= 10


def test_dynamo_graph_names_get_module_paths(encoder_result):
    stage = encoder_result["compiles"][0]["stages"]["dynamo_graph"]
    names = stage["names"]
    assert names["l_fn_modules_layers_modules_0_modules_self_attn_parameters_in_proj_bias_"] \
        == "layers.0.self_attn.in_proj_bias"
    assert "layers.1.linear2.weight" in names.values()
    assert all(full in stage["text"] for full in names)


def test_views_are_traced_only_when_asked(encoder_result, gallery_results):
    assert not {"core_aten", "prims"} & set(encoder_result["compiles"][0]["stages"])
    training = next(r for slug, r in gallery_results.items() if "training" in slug)
    assert {"core_aten", "prims"} <= set(training["compiles"][0]["stages"])


@pytest.mark.parametrize("name, short", [
    ("l_fn_modules_layers_modules_0_modules_self_attn_modules_out_proj_parameters_weight_",
     "layers.0.self_attn.out_proj.weight"),
    ("l_self_modules_linear_parameters_weight_", "linear.weight"),
    ("l_self_buffers_running_mean_", "running_mean"),
    ("l_x_", None), ("linear_1", None), ("l_self_modules_", None),
])
def test_short_name(name, short):
    assert short_name(name) == short


def test_short_names_finds_whole_identifiers_only():
    text = "add = l_self_modules_a_parameters_w_ + l_x_; xl_self_modules_a_parameters_w_"
    assert short_names(text) == {"l_self_modules_a_parameters_w_": "a.w"}


def test_graph_boxes_show_module_paths_for_lifted_parameters(encoder_result):
    compiled = encoder_result["compiles"][0]
    view = graph_view(compiled, "dynamo_graph", encoder_result, collapse="off")
    full = "l_fn_modules_layers_modules_0_modules_self_attn_parameters_in_proj_bias_"
    node = next(n for n in view["nodes"] if n["name"] == full)
    assert node["label"] == ["layers.0.self_attn.in_proj_bias", ""]  # the target repeated it
    assert len(node["label"][0]) * CHAR_W <= node["w"] < len(full) * CHAR_W  # it fits, not the full
    plain = [n for n in view["nodes"] if n["op"] == "call_function" and n["target"] != n["name"]]
    assert plain and not [n for n in plain if "label" in n]  # their own name and target, as they are
