"""A result stored by an earlier torchbolt, read today (its share link lives for good).

`tests/data/stored_result_v2.json` is a real stored row (key, source, options, result) that a
server of result version 2 wrote: its compile has kernels, fusion and timings but no Kernels
stage (the page of its day built it). Read through the server's store, it gains the stage the
result builder makes today; where what it stored cannot make one, the stage says why in words.
"""

from __future__ import annotations

import copy
import gzip
import json
import os

import pytest

from app.results import CachedStore
from app.store import Store
from compiler_core import result_json, stage_part
from compiler_core.report.conform import VALIDATOR
from compiler_core.report.result import build_result
from compiler_core.report.stored import compress_result
from compiler_core.wire import read_records

DATA = os.path.join(os.path.dirname(__file__), "data", "stored_result_v2.json")
with open(DATA, encoding="utf-8") as fh:
    ROW = json.load(fh)


def served(tmp_path, result: dict) -> tuple[dict, dict]:
    """The result as the store gives it to a stage request and in the whole answer."""
    store = CachedStore(Store(str(tmp_path)), 1 << 24)
    store.put(ROW["key"], ROW["source"], ROW["options"], result)  # compressed as v2 stored it
    answer = json.loads(gzip.decompress(store.answer(ROW["key"])))
    return store.get(ROW["key"])["result"], answer["result"]


@pytest.fixture(scope="module")
def stored_v2():
    assert ROW["result"]["version"] == 2
    assert "kernels" not in ROW["result"]["compiles"][0]["stages"]
    return copy.deepcopy(ROW["result"])


def test_a_version_2_result_is_served_with_its_kernels_stage(tmp_path, stored_v2):
    (kernel,) = stored_v2["compiles"][0]["kernels"]
    (timing,) = stored_v2["timings"]
    measured = {row["name"]: row["us_per_call"] for row in timing["kernels"]["compiled"]}
    for result in served(tmp_path, stored_v2):
        stage = stage_part(result, "0/0", "kernels")["artifact"]
        assert kernel["source"] in stage["text"] and stage["language"] == "cpp"
        (listed,) = stage["kernels"]
        assert listed["name"] == kernel["name"] == "cpp_fused_add_mul_sin_0"
        assert kernel["name"] in stage["text"].split("\n")[listed["line"] - 1]  # its header
        assert listed["time"] == {"us": measured[kernel["name"]], "callable": "<lambda>"}
        assert len(stage["src_lines"]) == stage["text"].count("\n") + 1
        assert result["version"] == 2 and result["stage_errors"] == []
        assert [e.message for e in VALIDATOR.iter_errors(result)] == []  # the documented shape


def test_a_fresh_result_stored_as_version_2_did_gets_the_same_kernels_stages(tmp_path):
    records = read_records(os.path.join(os.path.dirname(__file__), "data",
                                        "print_graph_break.records.jsonl"))
    fresh = build_result(records, "/work/main/compiler_core/gallery/01_print_graph_break.py")
    made = {c["id"]: c["stages"]["kernels"] for c in fresh["compiles"]}
    assert len(made) == 2
    old = copy.deepcopy(fresh)
    old["version"] = 2
    for compiled in old["compiles"]:
        del compiled["stages"]["kernels"]
    for result in served(tmp_path, old):
        assert {c["id"]: c["stages"].get("kernels") for c in result["compiles"]} == made


def test_a_stored_compile_that_cannot_make_the_stage_says_why(tmp_path, stored_v2):
    del stored_v2["compiles"][0]["kernels"]  # as a schema check would drop a malformed list
    for result in served(tmp_path, stored_v2):
        assert "kernels" not in result["compiles"][0]["stages"]
        (error,) = result["stage_errors"]
        assert (error["compile_id"], error["step"]) == ("0/0", "kernels")
        assert "earlier torchbolt (result version 2)" in error["reason"] and error["stages"] == ["kernels"]


def test_a_current_result_is_served_as_it_was_stored(stored_v2):
    current = {**stored_v2, "version": 3}  # no Kernels stage, yet not rebuilt: read as stored
    assert result_json(compress_result(current)) == json.dumps(current).encode()


def test_a_rebuilt_kernels_stage_is_cut_at_the_stage_text_limit(tmp_path, monkeypatch):
    """The stage made when a version-2 result is read keeps `stage_text_chars` as a fresh
    result's stages do: cut, marked, and listed in `truncated`."""
    monkeypatch.setenv("TORCHBOLT_LIMIT_STAGE_TEXT_CHARS", "200")
    for result in served(tmp_path, copy.deepcopy(ROW["result"])):
        stage = stage_part(result, "0/0", "kernels")["artifact"]
        assert stage["truncated"] is True and "(stage_text_chars)" in stage["text"]
        assert len(stage["text"].split("\n[... cut by torchbolt")[0]) == 200
        assert len(stage["src_lines"]) == stage["text"].count("\n") + 1
        assert any("0/0 kernels" in cut["message"] for cut in result["truncated"])
