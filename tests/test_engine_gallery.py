"""Every gallery example through the real engine: counts equal torch._dynamo.explain's, every
expected stage is present, kernels match the generated code, and results match the schema."""

from __future__ import annotations

import re

import jsonschema
import pytest

from compiler_core.features import GRAPH_STAGES
from compiler_core.gallery import list_examples
from compiler_core.report.conform import SCHEMA
from explain_reference import explain_script

SLUGS = [ex.slug for ex in list_examples()]
PATHS = {ex.slug: ex.path for ex in list_examples()}
DYNAMO_STAGES = {"bytecode_original", "bytecode_transformed", "dynamo_graph", "guards",
                 "core_aten", "prims", "metrics"}
INDUCTOR_STAGES = {"aot_joint", "aot_forward", "post_grad_graph", "ir_pre_fusion",
                   "ir_post_fusion", "output_code"}


def graphs(result):
    return [c for c in result["compiles"] if c["has_graph"]]


def test_gallery_has_enough_examples():
    assert len(SLUGS) >= 12


@pytest.mark.parametrize("slug", SLUGS)
def test_result_validates_against_schema(gallery_results, slug):
    jsonschema.validate(gallery_results[slug], SCHEMA)


@pytest.mark.parametrize("slug", SLUGS)
def test_script_ran_without_error(gallery_results, slug):
    result = gallery_results[slug]
    assert result["error"] is None, result["error"]
    assert result["finished"] and result["stdout"]
    assert result["environment"]["torch"].startswith("2.")


@pytest.mark.parametrize("slug", SLUGS)
def test_every_record_has_the_type_its_feature_declared(gallery_results, slug):
    """A real run's records all hold to their features' record types (a wrong declaration
    would drop real data, naming it in stage_errors)."""
    dropped = [e for e in gallery_results[slug]["stage_errors"] if "was dropped" in e["message"]]
    assert dropped == []


@pytest.mark.parametrize("slug", SLUGS)
def test_counts_and_break_lines_equal_explain(gallery_results, slug):
    reference = explain_script(PATHS[slug])
    result = gallery_results[slug]
    assert len(graphs(result)) == reference["graphs"]
    assert len(result["graph_breaks"]) == reference["breaks"]
    assert sorted(b["line"] for b in result["graph_breaks"]) == sorted(reference["break_lines"])
    failed_lines = [c["failure"]["line"] for c in result["compiles"] if c["failure"]]
    assert sorted(failed_lines) == sorted(reference["fullgraph_error_lines"])


@pytest.mark.parametrize("slug", SLUGS)
def test_every_expected_stage_is_present_and_non_empty(gallery_results, slug):
    for compile_ in graphs(gallery_results[slug]):
        stages = compile_["stages"]
        expected = set(DYNAMO_STAGES)
        if "output_code" in stages or "aot_forward" in stages or "aot_inference" in stages:
            expected |= INDUCTOR_STAGES - ({"aot_forward", "aot_joint"} if "aot_inference"
                                           in stages else set())
        assert expected <= set(stages), (compile_["id"], expected - set(stages))
        for stage in stages.values():
            assert stage["text"].strip()
            assert len(stage["src_lines"]) == stage["text"].count("\n") + 1


@pytest.mark.parametrize("slug", SLUGS)
def test_kernels_equal_the_generated_code(gallery_results, slug):
    for compile_ in graphs(gallery_results[slug]):
        code = compile_["stages"].get("output_code", {}).get("text", "")
        defined = re.findall(r"^(\w+) = async_compile\.\w+\(", code, re.M)
        called = set(re.findall(r"\bextern_kernels\.(\w+)\(", code))
        kernels = compile_["kernels"]
        assert sorted(k["name"] for k in kernels if k["kind"] != "extern") == sorted(defined)
        assert {k["name"].split(".", 1)[1] for k in kernels if k["kind"] == "extern"} == called
        for kernel in kernels:
            assert kernel["name"] in code
            if kernel["kind"] == "cpp":
                assert 'extern "C"' in kernel["source"]


@pytest.mark.parametrize("slug", SLUGS)
def test_backward_exactly_when_grads_are_required(gallery_results, slug):
    for compile_ in graphs(gallery_results[slug]):
        stages = compile_["stages"]
        if "aot_forward" in stages or "aot_inference" in stages:
            assert ("aot_backward" in stages) == ("aot_inference" not in stages)


def test_training_step_has_a_backward_graph(gallery_results):
    result = next(r for slug, r in gallery_results.items() if "training" in slug)
    assert any("aot_backward" in c["stages"] for c in result["compiles"])
    labels = {k["graph"] for c in result["compiles"] for k in c["kernels"]}
    assert "backward" in labels


def test_recompile_names_the_size_mismatch(gallery_results):
    result = next(r for slug, r in gallery_results.items() if "recompile" in slug)
    assert [c["id"] for c in graphs(result)][:2] == ["0/0", "0/1"]
    (recompile,) = result["recompiles"]
    assert recompile["compile_id"] == "0/1" and recompile["previous"] == "0/0"
    assert "size mismatch" in recompile["reason"]


def test_print_break_separates_two_compiles(gallery_results):
    result = gallery_results[SLUGS[0]]
    (brk,) = result["graph_breaks"]
    assert "print" in brk["explanation"] and brk["hints"]
    assert brk["compile_id"] == "0/0" and brk["resumes_in"] == "1/0"
    source_line = open(PATHS[SLUGS[0]]).read().splitlines()[brk["line"] - 1]
    assert "print(" in source_line
    assert 'File "' in brk["user_traceback"] and "worker.py" not in brk["user_traceback"]


def test_guards_point_at_user_lines(gallery_results):
    guards = graphs(gallery_results[SLUGS[0]])[0]["stages"]["guards"]["guards"]
    tensor_guards = [g for g in guards if g["kind"] == "TENSOR_MATCH"]
    assert tensor_guards and all(g["source"] and g["line"] for g in tensor_guards)


def test_dynamo_node_table_has_shapes_and_lines(gallery_results):
    nodes = graphs(gallery_results[SLUGS[0]])[0]["stages"]["dynamo_graph"]["nodes"]
    ops = [n for n in nodes if n["op"] == "call_function"]
    assert ops and all(n["shape"] and n["dtype"] and n["line"] for n in ops)


def test_decomposition_views_link_to_user_lines(gallery_results):
    result = next(r for slug, r in gallery_results.items() if "training" in slug)
    for name in ("core_aten", "prims"):
        stage = result["compiles"][0]["stages"][name]
        assert stage["view"] and stage["text"].startswith("# View:")
        assert any(stage["src_lines"]), f"{name} has no line linked to the user's code"


def test_custom_backend_gets_dynamo_stages_only(gallery_results):
    result = next(r for slug, r in gallery_results.items() if "custom_backend" in slug)
    for compile_ in graphs(result):
        assert "dynamo_graph" in compile_["stages"] and "output_code" not in compile_["stages"]
    assert "my_backend received a graph" in result["stdout"]  # the user's backend ran


@pytest.mark.parametrize("slug", SLUGS)
def test_census_counts_each_graph_stages_ops(gallery_results, slug):
    """Ops per IR level, counted independently here: the Dynamo graph's node table, and the
    `torch.ops.aten.` calls printed in the AOT and Core ATen graphs."""
    for compiled in gallery_results[slug]["compiles"]:
        stages, census = compiled["stages"], compiled["census"]
        assert set(census) == {s for s in stages if s in GRAPH_STAGES}
        if "dynamo_graph" in stages:
            ops = [n for n in stages["dynamo_graph"]["nodes"]
                   if n["op"] in ("call_function", "call_method", "call_module")]
            assert census["dynamo_graph"]["ops"] == len(ops)
        for stage in ("aot_forward", "aot_inference", "core_aten"):
            if stage in stages:
                # calls in the code, not quoted in a `# File:` comment (compiled autograd's
                # graphs quote the graph they were traced from)
                calls = re.findall(r'^\s*\w+(?:: "[^"]*")? = torch\.ops\.(aten\.[\w.]+)\(',
                                   stages[stage]["text"], re.M)
                assert census[stage]["ops"] >= len(calls)
                assert census[stage]["distinct"] >= len(set(calls))


def test_environment_counts_the_installed_torchs_opsets(gallery_results):
    opsets = next(iter(gallery_results.values()))["environment"]["opsets"]
    assert 1000 < opsets["aten"] < 5000 and 100 < opsets["core_aten"] < 400
    assert 50 < opsets["prims"] < 400 and opsets["core_aten"] < opsets["aten"]
