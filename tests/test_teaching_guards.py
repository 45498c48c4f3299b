"""Guards for teaching (issue 11, parts 1 and 7), on the real engine: the guard a recompile's
reason names is found among the old compile's guards, and symbolic shape guards are marked as
such, with their user line."""

from __future__ import annotations

import pytest

from compiler_core import Options, get_example, list_lessons

# Three kinds of guard failure: a constant int, a tensor's dtype, a symbolic size relation.
FAILURES = '''import torch


def f(x, n):
    return x * n


cf = torch.compile(f)
cf(torch.ones(4), 3)
cf(torch.ones(4), 4)  # L['n'] == 3 fails: 0/1
cf(torch.ones(4, dtype=torch.float64), 4)  # the dtype of x: 0/2


def g(x):
    return x.sin()


cg = torch.compile(g, dynamic=True)
cg(torch.ones(4))
cg(torch.ones(1))  # 2 <= L['x'].size()[0] fails: 1/1
'''


@pytest.fixture(scope="module")
def failures(worker):
    result = worker.run(FAILURES, Options(device="cpu", measure=False, backend="eager"))
    assert result["error"] is None, result["error"]
    return result


@pytest.fixture(scope="module")
def examples(worker):
    """The two gallery examples these tests read (not the whole gallery)."""
    def run(slug):
        example = get_example(slug)
        return worker.run(example.source, Options(device="cpu", measure=False),
                          user_file=example.path)
    return {"recompile_on_shape_change": run("recompile_on_shape_change"),
            "dynamic_shapes": run("dynamic_shapes")}


def guards_of(result, compile_id):
    compile = next(c for c in result["compiles"] if c["id"] == compile_id)
    return compile["stages"]["guards"]


def failed(result, compile_id, previous):
    """The guards of `previous` that the recompile to `compile_id` names as failed."""
    (recompile,) = [r for r in result["recompiles"]
                    if r["compile_id"] == compile_id and r["previous"] == previous]
    guards = guards_of(result, previous)
    return [guards["guards"][i] for i in recompile["failed_guards"]], guards


def test_the_failed_size_guard_of_a_recompile_is_found(examples):
    (guard,), stage = failed(examples["recompile_on_shape_change"], "0/1", "0/0")
    assert guard["kind"] == "TENSOR_MATCH" and guard["source"] == "L['x']"
    assert "size=[8, 16]" in guard["code"]
    assert "size=[8, 16]" in stage["text"].split("\n")[guard["row"] - 1]  # its row in the tree


@pytest.mark.parametrize("compile_id, previous, kind, code", [
    ("0/1", "0/0", "EQUALS_MATCH", "L['n'] == 3"),
    ("0/2", "0/1", "TENSOR_MATCH", "torch.float32"),
    ("1/1", "1/0", "LAMBDA_GUARD", "2 <= L['x'].size()[0]"),
])
def test_each_kind_of_failed_guard_is_found(failures, compile_id, previous, kind, code):
    (guard,), stage = failed(failures, compile_id, previous)
    assert guard["kind"] == kind and code in guard["code"]
    assert code in stage["text"].split("\n")[guard["row"] - 1]


def test_symbolic_guards_are_marked_with_their_user_line(examples):
    guards = guards_of(examples["dynamic_shapes"], "0/0")["guards"]
    symbolic = [g for g in guards if g["symbolic"]]
    assert {g["code"] for g in symbolic} >= {"2 <= L['x'].size()[0]"}
    assert all(g["source"] is None for g in symbolic)  # not under any input's manager
    assert next(g for g in symbolic if g["code"] == "2 <= L['x'].size()[0]")["line"] == 14
    assert not [g for g in guards if g["symbolic"] and g["kind"] == "TENSOR_MATCH"]


def test_the_guard_cache_serves_other_shapes_from_one_compile(examples):
    result = examples["dynamic_shapes"]
    assert result["error"] is None, result["error"]
    assert [c["id"] for c in result["compiles"]] == ["0/0"] and not result["recompiles"]
    assert [(c["outcome"], c["compile_id"]) for c in result["calls"]] == [
        ("compile", "0/0"), ("hit", "0/0"), ("hit", "0/0")]
    assert "hits of 0/0" in get_lesson_text("dynamic_shapes")


def get_lesson_text(slug):
    return next(lesson.explanation for lesson, _ in list_lessons() if lesson.slug == slug)
