"""The pure core on a checked-in real record stream (print_graph_break on torch 2.13 CPU): no
worker, strict mode, partial streams, and a broken stage that must not take the others down."""

from __future__ import annotations

import copy
import json
import os

import jsonschema
import pytest

from compiler_core.report.result import build_result
from compiler_core.features import RECORD_STAGE, STAGE_NAMES

HERE = os.path.dirname(os.path.abspath(__file__))
RECORDS = [json.loads(line) for line in open(os.path.join(HERE, "data",
                                                          "print_graph_break.records.jsonl"))]
USER_FILE = next(r["meta"]["stack"][-1]["filename"] for r in RECORDS if r["name"] == "dynamo_start")
SCHEMA = json.load(open(os.path.join(HERE, "..", "compiler_core", "report", "result.schema.json")))


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
    stage = build_result(RECORDS, USER_FILE)["compiles"][0]["stages"]["dynamo_graph"]
    source = open(USER_FILE).read().splitlines() if os.path.exists(USER_FILE) else None
    linked = [(text, line) for text, line in zip(stage["text"].split("\n"), stage["src_lines"])
              if line is not None]
    assert linked, "no graph line is linked to the user's code"
    if source:  # the file exists when the checkout is where the stream was recorded
        for text, line in linked:
            if "# File:" in text:
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
    assert error["stage"].endswith("guards")
    stages = next(c for c in result["compiles"] if c["id"] == guards["compile_id"])["stages"]
    assert "guards" not in stages and "dynamo_graph" in stages and "output_code" in stages
