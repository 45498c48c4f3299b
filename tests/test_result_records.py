"""The pure core on a checked-in real record stream (print_graph_break on torch 2.13 CPU): no
worker, strict mode, partial streams, and a broken stage that must not take the others down."""

from __future__ import annotations

import copy
import json
import os

import jsonschema
import pytest

from compiler_core.report.conform import SCHEMA
from compiler_core.report.result import build_result
from compiler_core.report.trace_log import TraceConverter, compile_id_of
from compiler_core.features import RECORD_STAGE, STAGE_NAMES
from compiler_core.gallery import get_example

HERE = os.path.dirname(os.path.abspath(__file__))
RECORDS = [json.loads(line) for line in open(os.path.join(HERE, "data",
                                                          "print_graph_break.records.jsonl"))]
USER_FILE = next(r["meta"]["stack"][-1]["filename"] for r in RECORDS if r["name"] == "dynamo_start")


def test_strict_build_of_a_real_stream_is_schema_valid():
    result = build_result(RECORDS, USER_FILE, strict=True)
    jsonschema.validate(result, SCHEMA)
    assert [c["id"] for c in result["compiles"]] == ["0/0", "1/0"]
    assert result["compiles"][1]["frame"]["name"].startswith("torch_dynamo_resume_in_f_at_")
    assert result["finished"] and result["error"] is None and not result["stage_errors"]


def test_every_stage_name_is_registered():
    result = build_result(RECORDS, USER_FILE, strict=True)
    produced = {name for c in result["compiles"] for name in c["stages"]}
    assert produced <= set(STAGE_NAMES)
    assert {"dynamo_graph", "guards", "output_code"} <= set(RECORD_STAGE.values())


def test_src_lines_link_graph_code_to_the_users_lines():
    """Each `# File:` line of the graph names the line of the script (the gallery example the
    stream was recorded from, wherever this checkout is) whose code it quotes."""
    example = get_example("print_graph_break")
    assert os.path.basename(USER_FILE) == os.path.basename(example.path)
    source = example.source.splitlines()
    stage = build_result(RECORDS, USER_FILE)["compiles"][0]["stages"]["dynamo_graph"]
    linked = [(text, line) for text, line in zip(stage["text"].split("\n"), stage["src_lines"])
              if line is not None and "# File:" in text]
    assert linked, "no graph line is linked to the user's code"
    for text, line in linked:
        assert text.split("code: ", 1)[1].strip() == source[line - 1].strip()


@pytest.mark.parametrize("cut", [0.25, 0.5, 0.75])
def test_a_prefix_of_the_stream_builds_a_partial_result(cut):
    prefix = RECORDS[: int(len(RECORDS) * cut)]
    result = build_result(prefix, USER_FILE, strict=True)
    assert not result["finished"]
    assert len(result["compiles"]) <= 2


def test_a_broken_stage_is_recorded_and_the_others_still_arrive():
    records = copy.deepcopy(RECORDS)
    guards = next(r for r in records if r["name"] == "dynamo_cpp_guards_str")
    guards["payload"] = 12345  # not text: the guards parser fails
    with pytest.raises(AttributeError):
        build_result(records, USER_FILE, strict=True)
    result = build_result(records, USER_FILE)
    (error,) = [e for e in result["stage_errors"] if e["compile_id"] == guards["compile_id"]]
    assert error["step"].endswith("guards")
    stages = next(c for c in result["compiles"] if c["id"] == guards["compile_id"])["stages"]
    assert "guards" not in stages and "dynamo_graph" in stages and "output_code" in stages


def test_a_compiled_autograd_compile_keeps_its_records_together():
    """Compile ids as PyTorch writes them (`CompileId.__str__`), compiled autograd's too: its
    backward graph's `!0`, and `!0/1/0` for Dynamo compiling it, whose trace entries and hook
    records (bytecode, node tables: `CompileContext`'s id) must make one compile, not two."""
    from torch._guards import CompileId
    for ids in ({"frame_id": 1, "frame_compile_id": 0},
                {"compiled_autograd_id": 0, "frame_id": None, "frame_compile_id": None},
                {"compiled_autograd_id": 0, "frame_id": 1, "frame_compile_id": 0}):
        assert compile_id_of({**ids, "attempt": 0}) == str(CompileId(**ids))
    converter = TraceConverter()
    graph = next(r for r in RECORDS if r["name"] == "dynamo_output_graph")
    name, cid, meta = converter.convert({"dynamo_output_graph": {}, "compiled_autograd_id": 0,
                                         "frame_id": 1, "frame_compile_id": 0, "attempt": 0})
    traced = {**graph, "name": name, "compile_id": cid, "meta": meta}
    hooked = {**next(r for r in RECORDS if r["name"] == "fx_nodes"), "compile_id": str(
        CompileId(compiled_autograd_id=0, frame_id=1, frame_compile_id=0))}
    result = build_result([traced, hooked], USER_FILE, strict=True)
    jsonschema.validate(result, SCHEMA)
    (compiled,) = result["compiles"]
    assert compiled["id"] == "!0/1/0" and compiled["stages"]["dynamo_graph"]["nodes"]
