"""The trust boundary for what a job writes (issue 23): records, the result built from them, the
parsers that read their text, and the stored form. Pure and fast: no job runs here (the live
attacks through a running server are in tests/test_untrusted_live.py).

Every case below was an exception, a 500, a freeze or unbounded memory before the boundary:
the four backtracking regexes, a record without meta, a line with no newline, a 40 MB note.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import pkgutil
import re
import time
import zlib

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import compiler_core.report as report
import compiler_core.features as features
import compiler_core.parsers as parsers
import compiler_core.present as present
from compiler_core import compress_result, result_index
from compiler_core.report.conform import SCHEMA
from compiler_core.report.result import build_result
from compiler_core.report.stored import expand_result
from compiler_core.wire import RecordTail, parse_record, read_records
from compiler_core.features.breaks import parse_break
from compiler_core.parsers.common import fx_src_lines
from compiler_core.features.guards import parse_guards
from compiler_core.supervisor.job import Job

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = read_records(os.path.join(HERE, "data", "print_graph_break.records.jsonl"))
USER_FILE = "/work/main/compiler_core/gallery/01_print_graph_break.py"  # as in that run
VALIDATOR = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)
HOSTILE_CHARS = 64 * 1024


def report_patterns() -> dict[str, re.Pattern]:
    """Every compiled regex of the packages that read what a job wrote (the result builder, the
    features, the parsers, the presentation): all of them read text a job wrote."""
    found = {}
    for package in (report, features, parsers, present):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            module = importlib.import_module(info.name)
            found.update({f"{info.name}.{k}": v for k, v in vars(module).items()
                          if isinstance(v, re.Pattern)})
    return found


def fragments(pattern: re.Pattern) -> list[str]:
    """Pieces a hostile text repeats: the pattern's literal runs, and characters that make a
    `\\s*`, `.*` or `\\w+` run long."""
    source = re.sub(r"\(\?P<\w+>", "(", pattern.pattern)
    literals = [re.sub(r"\\(.)", r"\1", run)
                for run in re.findall(r"(?:\\.|[^\\()\[\]{}*+?|^$.])+", source)]
    return [x for x in literals if x] + ["a", " ", "\n", " \n", "0", ":", "(", "'", '"', "a_"]


@pytest.mark.parametrize("name", sorted(report_patterns()))
def test_no_report_regex_backtracks_on_hostile_text(name):
    """64 KB of any fragment repeated, with and without a trailing break, in linear time (the
    guard regex took 5 s on 56 KB of `source=`, the break header 1 s on 64 KB). Timed in this
    thread's CPU seconds, which the cost is about: the wall clock also counts the time other
    processes hold the cores (0.25 s of it was not enough at load 10 on 2 cores)."""
    pattern = report_patterns()[name]
    for piece in fragments(pattern):
        for text in (piece * (HOSTILE_CHARS // len(piece)), (piece + "x") * (HOSTILE_CHARS //
                                                                                (len(piece) + 1))):
            started = time.thread_time()
            pattern.search(text)
            pattern.findall(text)
            assert time.thread_time() - started < 0.25, (name, piece)


HOSTILE_TEXTS = {
    "guards": "+- GuardManager: " + "source=" * 150_000,
    "guard comments": "+- TYPE_MATCH: x" + " " * 500_000 + "#",
    "break header": "Graph break in user code at " * 40_000,
    "break fields": " \n" * 500_000,
    "fx comment": "# File: " * 100_000,
}


@pytest.mark.parametrize("name", sorted(HOSTILE_TEXTS))
def test_parsers_read_a_megabyte_of_hostile_text_in_linear_time(name):
    """In CPU seconds, as above: "break fields" takes 0.45 s of CPU, 3.6 s of wall at load 10."""
    text = HOSTILE_TEXTS[name]
    started = time.thread_time()
    parse_guards(text, USER_FILE)
    parse_break(text, USER_FILE)
    fx_src_lines(text, USER_FILE)
    assert time.thread_time() - started < 2.0


def test_the_linear_parsers_read_real_text_as_before():
    """The break and guards of the checked-in real run still parse to what PyTorch said."""
    result = build_result(REAL, USER_FILE, strict=True)
    (brk,) = result["graph_breaks"]
    assert brk["gb_code"] == "GB0059" and brk["line"] and brk["hints"]
    guards = result["compiles"][0]["stages"]["guards"]["guards"]
    assert any(g["kind"] == "TENSOR_MATCH" and g["source"] == "L['x']" for g in guards)


# -- records


def test_a_record_without_its_fields_is_dropped_or_costs_only_its_part():
    assert parse_record(b'{"name": "error", "compile_id": null}')["meta"] == {}
    assert parse_record(b'{"name": 3}') is None
    assert parse_record(b'{"name": "x", "meta": []}') is None
    assert parse_record(b"[" * 100_000) is None  # RecursionError in json.loads
    assert parse_record(b'{"name": "x", "t": 1' + b"0" * 5000 + b"}") is None  # int too long
    result = build_result(REAL + [parse_record(b'{"name": "error", "compile_id": null}')],
                          USER_FILE)
    assert result["error"] is None and result["compiles"]
    assert [e["step"] for e in result["stage_errors"]] == ["error"]


def test_a_line_with_no_newline_is_read_once_and_dropped(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHBOLT_LIMIT_RECORD_BYTES", str(1 << 20))
    path = tmp_path / "records.jsonl"
    path.write_bytes(json.dumps(REAL[0]).encode() + b"\n" + b"x" * (5 << 20))
    tail = RecordTail(str(path))
    assert len(tail.new_records()) == 1
    assert tail.dropped["oversized"] == 1 and len(tail._line) == 0
    offset = tail._offset
    assert tail.new_records() == [] and tail._offset == offset  # nothing read again
    with open(path, "ab") as fh:
        fh.write(b"\n" + json.dumps(REAL[1]).encode() + b"\n")
    assert [r["name"] for r in tail.new_records()] == [REAL[1]["name"]]


def test_a_job_keeps_at_most_its_record_limits(monkeypatch):
    monkeypatch.setenv("TORCHBOLT_LIMIT_RECORDS_PER_JOB", "10")
    job = Job("pass")
    kept = [job.add_record(r) for r in REAL]
    assert kept.count(True) == 10 and job.over_limit == "records_per_job"
    monkeypatch.setenv("TORCHBOLT_LIMIT_RECORDS_PER_JOB", "1000")
    monkeypatch.setenv("TORCHBOLT_LIMIT_RECORD_BYTES_PER_JOB", "50000")
    job = Job("pass")
    assert not all(job.add_record(r) for r in REAL) and job.over_limit == "record_bytes_per_job"
    assert len(json.dumps(job.records())) < 60000


def test_notes_and_stage_texts_are_capped(monkeypatch):
    monkeypatch.setenv("TORCHBOLT_LIMIT_STAGE_TEXT_CHARS", "1000")
    note = {"name": "note", "compile_id": None, "t": 0, "meta": {"text": "n" * 40_000},
            "payload": None}
    result = build_result(REAL + [note] * 60, USER_FILE)
    assert len(result["notes"]) == 50 and max(map(len, result["notes"])) == 2000
    graph = result["compiles"][0]["stages"]["output_code"]
    assert graph["truncated"] and "stage_text_chars" in graph["text"]
    assert len(graph["src_lines"]) == graph["text"].count("\n") + 1
    assert {t["limit"] for t in result["truncated"]} == {"notes_per_job", "note_chars",
                                                         "stage_text_chars"}


# -- the stored form


def test_a_real_result_is_stored_whole():
    result = build_result(REAL, USER_FILE)
    assert expand_result(compress_result(result)) == result


def test_a_huge_result_is_stored_within_the_limit(monkeypatch):
    monkeypatch.setenv("TORCHBOLT_LIMIT_RESULT_COMPRESSED_BYTES", str(1 << 20))
    result = build_result(REAL, USER_FILE)
    noise = os.urandom(3 << 20).hex()  # 6 MB that does not compress below 3 MB
    result["compiles"][0]["stages"]["output_code"]["text"] = noise
    result["stdout"] = noise[:2_000_000]
    blob = compress_result(result)
    assert len(blob) <= 1 << 20
    stored = expand_result(blob)
    assert "dropped by torchbolt" in stored["compiles"][0]["stages"]["output_code"]["text"]
    assert stored["compiles"][0]["stages"]["dynamo_graph"] == \
        result["compiles"][0]["stages"]["dynamo_graph"]  # the smaller stages stay
    assert any("output_code" in t["message"] for t in stored["truncated"])
    assert result["compiles"][0]["stages"]["output_code"]["text"] == noise  # caller's copy


def test_a_result_full_of_forged_lists_keeps_only_its_summary(monkeypatch):
    monkeypatch.setenv("TORCHBOLT_LIMIT_RESULT_COMPRESSED_BYTES", str(1 << 16))
    result = build_result(REAL, USER_FILE)
    result["timings"] = [{"x": os.urandom(64).hex()} for _ in range(20_000)]
    stored = expand_result(compress_result(result))
    assert stored["error"]["type"] == "OutputLimit" and stored["timings"] == []
    assert len(zlib.compress(json.dumps(stored).encode())) <= 1 << 16


# -- property: any records, however wrong, build a result that holds to the schema

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
NAMES = sorted({r["name"] for r in REAL} | {"error", "note", "stage_error", "call", "export",
                                            "torchscript", "kernel_lines", "ir_origins",
                                            "gpu_preview", "triton_kernel", "autotune_choices",
                                            "fusion_log", "cudagraph_log", "aoti_package",
                                            "aoti_timing"})


@st.composite
def mutated_records(draw) -> list[dict]:
    """The real run's records with some of them changed: a meta field, the payload, the name
    or the compile id given another value, a payload cut short, a record repeated."""
    records = copy.deepcopy(REAL)
    for _ in range(draw(st.integers(1, 6))):
        index = draw(st.integers(0, len(records) - 1))
        record = records[index]
        change = draw(st.sampled_from(["meta", "payload", "name", "compile_id", "cut", "copy"]))
        if change == "meta":
            keys = list(record["meta"]) or ["text"]
            record["meta"][draw(st.sampled_from(keys) | st.text(max_size=6))] = draw(JSON)
        elif change == "payload":
            record["payload"] = draw(st.none() | st.text(max_size=200))
        elif change == "name":
            record["name"] = draw(st.sampled_from(NAMES))
        elif change == "compile_id":
            record["compile_id"] = draw(st.sampled_from([None, "0/0", "1/0", "9/9", "x"]))
        elif change == "cut" and record["payload"]:
            record["payload"] = record["payload"][:draw(st.integers(0, len(record["payload"])))]
        else:
            records.insert(index, copy.deepcopy(record))
    return [r for r in map(lambda r: parse_record(json.dumps(r)), records) if r]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_records())
def test_any_records_build_a_result_that_holds_to_the_schema(records):
    result = build_result(records, USER_FILE)
    errors = [f"{list(e.absolute_path)}: {e.message[:200]}" for e in VALIDATOR.iter_errors(result)]
    assert errors == []
    result_index(result)
    expand_result(compress_result(result))


def test_every_limit_is_in_the_readme_with_its_default():
    """The README's table names each limit the code enforces, with the code's default."""
    from compiler_core.limits import TABLE
    readme = open(os.path.join(os.path.dirname(HERE), "README.md"), encoding="utf-8").read()
    rows = [line for line in readme.split("\n") if line.startswith("| `")]
    for item in TABLE:
        shown = {"bytes": f"{item.default / 2**20:g} MiB", "seconds": f"{item.default:g} s"}.get(
            item.unit, f"{item.default:,}")
        row = next((r for r in rows if f"`{item.name}`" in r), "")
        assert shown in row, (item.name, shown, row)


def test_a_flood_of_lines_that_are_not_records_stops_the_reading(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHBOLT_LIMIT_RECORDS_PER_JOB", "1000")
    path = tmp_path / "records.jsonl"
    path.write_bytes(b"x\n" * 5000 + json.dumps(REAL[0]).encode() + b"\n")
    tail = RecordTail(str(path))
    tail.new_records()  # reads the lines; the next call sees they were too many
    assert tail.new_records() == [] and tail.over_limit == "records_per_job"
