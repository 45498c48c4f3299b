"""What a speaker shows is true (issue 24): each lesson's claims, checked against the real result
of its example (the session's gallery run: CPU, timings and views on, as the page runs them).

One test per lesson, named after it; a lesson whose text changes should change its test. Also:
the script's output is what it printed, as often as it printed it (timing replays kept apart),
and a break's headline is PyTorch's own `gb_type`.
"""

from __future__ import annotations

import ast

import pytest

from compiler_core import Options, list_lessons
from compiler_core.gallery import get_example
from compiler_core.gallery.lessons import compile_id

LESSONS = {example.slug: lesson for lesson, example in list_lessons()}


def line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.split("\n"), 1) if text in line)


def compiles(result) -> dict:
    return {c["id"]: c for c in result["compiles"]}


@pytest.fixture(scope="module")
def lesson(gallery_results):
    def get(slug):
        result = gallery_results[slug]
        assert result["error"] is None, result["error"]
        return LESSONS[slug].explanation, result
    return get


def test_lesson_tracing_vs_scripting_vs_dynamo(lesson):
    text, result = lesson("trace_script_compile")
    traced, scripted = ({p["kind"]: p for p in result["torchscript"]}[k] for k in ("trace", "script"))
    # "and it warns"; torch 2.14 also warns that jit.trace is deprecated (a FutureWarning; 2.13's
    # DeprecationWarning is hidden by Python's default filters)
    assert [w["category"] for w in traced["warnings"] if w["category"] != "FutureWarning"] \
        == ["TracerWarning"]
    assert "prim::If" not in traced["stages"]["torchscript_graph"]["text"]  # baked in
    assert "prim::If" in scripted["stages"]["torchscript_graph"]["text"]  # both branches kept
    (brk,) = result["graph_breaks"]  # Dynamo breaks at the `if` ...
    assert brk["gb_type"] == "Data-dependent branching" and brk["line"] == 9
    assert brk["resumes_in"] == "1/0"  # ... and traces the branch taken into a second graph
    assert "sin" in compiles(result)["1/0"]["stages"]["dynamo_graph"]["text"]
    assert "prim::If" in text and "breaks the graph" in text


def test_lesson_guards_and_recompiles(lesson):
    text, result = lesson("recompile_on_shape_change")
    (recompile,) = result["recompiles"]
    assert (recompile["compile_id"], recompile["previous"]) == ("0/1", "0/0")
    (failed,) = recompile["failed_guards"]  # marked in 0/0's guards
    guard = compiles(result)["0/0"]["stages"]["guards"]["guards"][failed]
    assert guard["kind"] == "TENSOR_MATCH" and "size=[8, 16]" in guard["code"]
    assert [c["outcome"] for c in result["calls"]] == ["compile", "recompile"]
    assert "size guard fails" in text


def test_lesson_graph_breaks_and_resume_functions(lesson):
    text, result = lesson("print_graph_break")
    (brk,) = result["graph_breaks"]
    assert brk["gb_code"] == "GB0059" and brk["line"] == 17
    resume = compiles(result)[brk["resumes_in"]]
    assert brk["resumes_in"] == "1/0" and resume["frame"]["name"] == "torch_dynamo_resume_in_f_at_17"
    assert "torch_dynamo_resume_in_f_at_N" in text and "1/0" in text
    # "runs the print in plain Python": once, as the script ran it, although timings replayed f
    assert result["stdout"].count("inside f, between the two graphs") == 1
    assert result["timings"] and result["replay_output"]["lines"] > 100
    assert "inside f, between the two graphs" in result["replay_output"]["head"]


def test_lesson_the_guard_cache_serves_later_calls(lesson):
    text, result = lesson("dynamic_shapes")
    assert list(compiles(result)) == ["0/0"] and not result["recompiles"]
    assert [(c["outcome"], c["compile_id"]) for c in result["calls"]] == [
        ("compile", "0/0"), ("hit", "0/0"), ("hit", "0/0")]
    guards = compiles(result)["0/0"]["stages"]["guards"]["guards"]
    assert any(g["symbolic"] for g in guards)
    assert "hits of 0/0" in text and "one compile" in text


def test_lesson_ir_narrowing(lesson):
    text, result = lesson("softmax_layernorm")
    compiled = compiles(result)["0/0"]
    census, stages = compiled["census"], compiled["stages"]
    assert census["dynamo_graph"]["ops"] == 2  # "two torch-level calls"
    core = stages["core_aten"]["text"]
    assert "aten._softmax" in core and "aten.native_layer_norm" in core  # kept as single ops
    assert census["core_aten"]["ops"] < census["aot_inference"]["ops"]  # Inductor goes further
    assert "aten.amax" in stages["aot_inference"]["text"]  # reductions and pointwise math
    assert census["prims"]["ops"] > census["aot_inference"]["ops"]  # prims go below even that
    assert "_softmax, native_layer_norm" in text


def test_lesson_a_custom_backend_receives_the_fx_graph(lesson):
    text, result = lesson("custom_backend")
    stages = set(result["compiles"][0]["stages"])
    assert "dynamo_graph" in stages
    assert not stages & {"aot_inference", "aot_forward", "post_grad_graph", "output_code"}
    assert "my_backend received a graph" in result["stdout"]  # the Output tab
    assert "call_function" in result["stdout"] and "no AOTAutograd or Inductor" in text


def test_lesson_fusion(lesson):
    text, result = lesson("mlp_fusion")
    compiled = result["compiles"][0]
    kernels = [k["name"] for k in compiled["kernels"]]
    assert any(name.startswith("extern_kernels.") for name in kernels)  # library calls
    generated = [name for name in kernels if name.startswith("cpp_fused")]
    (norm,) = [name for name in generated if "layer_norm" in name]
    (gelu,) = [name for name in generated if "gelu" in name]
    assert len(kernels) < compiled["census"]["post_grad_graph"]["ops"]  # a handful of kernels
    # the scheduler's fusion log: the LayerNorm's nodes fused pair by pair into one kernel ...
    decisions = compiled["fusion"]["decisions"]
    source = get_example("mlp_fusion").source
    fused = [d for d in decisions if d["fused"]]
    assert len(fused) >= 2 and {d["kernel"] for d in fused} == {norm}
    assert {line for d in fused for line in d["lines"]} == {line_of(source, "self.norm(x)")}
    # ... the residual add is refused: the matmuls lie between it and the LayerNorm
    residual = line_of(source, "return x + self.fc2(h)")
    refusals = [d for d in decisions if residual in d["lines"]]
    assert refusals and all((d["fused"], d["kernels"][0], d["reason"]) == (
        False, norm, "intermediate nodes between node1 & node2") for d in refusals)
    # no decision names the GELU or a library call
    assert not any(gelu in d["kernels"] or any(str(k).startswith("extern_kernels.")
                                               for k in d["kernels"]) for d in decisions)
    assert "library calls" in text and '"intermediate nodes between node1 & node2"' in text
    assert "No decision names the GELU" in text


def test_lesson_export_beside_the_jit(lesson):
    text, result = lesson("export_vs_compile")
    (program,) = result["exports"]
    graph = program["stages"]["exported_program"]["text"]
    assert "PARAMETER" in graph and "p_proj_weight" in graph  # parameters become inputs
    # beside the compile's Dynamo graph: the first compile (0/0 to torch 2.14; from 2.15 the
    # export's Dynamo frame takes frame 0 and it is 1/0), of forward
    assert compiles(result)[compile_id(LESSONS["export_vs_compile"].steps[0].panes[1], result)][
        "frame"]["name"] == "forward"
    assert "parameters" in text and "become inputs" in text


def test_lesson_jit_vs_aot(lesson):
    text, result = lesson("jit_vs_aot")
    (jit,) = result["compiles"]
    assert jit["stages"]["output_code"]["language"] == "python"  # a Python wrapper
    (program,) = result["exports"]
    aoti, stages = program["aoti"], program["stages"]
    assert aoti["built_by"] == "script" and aoti["line"] == 31  # the script's own package
    wrapper = stages["aoti_wrapper"]
    assert wrapper["language"] == "cpp" and "AOTInductorModel::run_impl" in wrapper["text"]
    assert 17 in wrapper["src_lines"] and 17 in stages["aoti_kernels"]["src_lines"]  # forward
    assert any(f["path"].endswith(".wrapper.so") for f in aoti["package_files"])  # the library
    # loading the package and its first call cost less than the JIT's first call
    assert 0 < aoti["load_s"] + aoti["first_call_s"] < aoti["jit_first_call_s"]
    assert "no start-up latency, no Python" in text and "shared library" in text


def shown_text(result: dict, pane) -> str:
    """What a step's pane shows of the real result: its stage's text; for Kernels, the output
    code's kernels and the kernel list's fusion decisions."""
    entries = result["compiles"] + result["exports"] + result["torchscript"]
    entry = next(e for e in entries if e["id"] == compile_id(pane, result))
    if pane.stage != "kernels":
        return entry["stages"][pane.stage]["text"]
    decisions = entry["fusion"]["decisions"]
    return "\n".join([entry["stages"]["output_code"]["text"], *(d["reason"] for d in decisions)])


def test_each_step_points_at_code_and_text_its_example_has(gallery_results):
    """Each step's points (the browser walk scrolls to each and finds it readable on screen):
    an editor point is a line of the script's code (not its docstring or a comment), a pane's is
    in that pane's real stage; in the timings view, one of its headings that the text quotes."""
    for lesson, example in list_lessons():
        result = gallery_results[example.slug]
        code_from = ast.parse(example.source).body[1].lineno  # past the module's docstring
        for step in lesson.steps:
            assert step.points, step.text
            for point in step.points:
                if point.place == "editor":
                    line = line_of(example.source, point.text)
                    assert line >= code_from, point
                    assert not example.source.split("\n")[line - 1].strip().startswith("#"), point
                elif step.panes[point.place].stage == "timings":
                    assert f"\u201c{point.text}\u201d" in step.text, point
                else:
                    assert point.text in shown_text(result, step.panes[point.place]), point


def test_every_lesson_has_its_claims_test():
    assert set(LESSONS) == {"trace_script_compile", "recompile_on_shape_change",
                            "print_graph_break", "dynamic_shapes", "softmax_layernorm",
                            "custom_backend", "mlp_fusion", "export_vs_compile", "jit_vs_aot",
                            "inference_no_grad"}  # its claims: tests/test_attribution_lesson.py


PRINT_TWICE = """import torch

def f(x):
    print("first print")
    y = x.sin()
    print("second print")
    return y.cos()

torch.compile(f)(torch.ones(4))
"""


def test_a_script_that_prints_twice_shows_two_prints_with_timings_on(worker):
    result = worker.run(PRINT_TWICE, Options(device="cpu", views=False))
    assert result["error"] is None and result["timings"]
    assert result["stdout"].count("first print") == 1
    assert result["stdout"].count("second print") == 1
    assert result["replay_output"]["lines"] >= 2 * result["timings"][0]["e2e"]["warm"][
        "eager"]["samples"]


def test_a_data_dependent_branch_is_headlined_as_pytorch_names_it(gallery_results):
    (brk,) = gallery_results["data_dependent_branch"]["graph_breaks"]
    assert brk["gb_type"] == "Data-dependent branching" and brk["gb_code"] == "GB0170"
    assert brk["reason"] == "Data-dependent branching"
    assert "The branch condition involves a tensor computed as follows:" in brk["explanation"]
    assert "gt(sum_1, 0)" in brk["explanation"]  # the condition's computation, kept


def test_the_kernel_profiling_lines_are_explained_where_they_are(gallery_results, worker):
    """The profiling lines torchbolt's CPU timings add are noted on the output code that holds
    them (the note quotes the line), not on every run's Output tab (a syntax error's included)."""
    output_code = gallery_results["mlp_fusion"]["compiles"][0]["stages"]["output_code"]
    line = output_code["source_note"].split("`")[1]
    assert line in output_code["text"] and "enable_kernel_profile" in output_code["source_note"]
    broken = worker.run("import torch\ndef f(:\n", Options(device="cpu"))
    assert broken["error"]["type"] == "SyntaxError"
    for result in (gallery_results["mlp_fusion"], broken):
        assert not [note for note in result["notes"] if "kernel_profile" in note]


def test_the_two_guard_counts_say_what_they_count(gallery_results):
    compiled = compiles(gallery_results["recompile_on_shape_change"])["0/0"]
    note = compiled["stages"]["metrics"]["source_note"]
    assert f"guard_count {compiled['stages']['metrics']['values']['guard_count']} " in note
    assert f"lists the {len(compiled['stages']['guards']['guards'])} checks" in note
