"""Import at scale (issue 46), on a log of real compiles (`encoder_log`,
tests/test_trace_import_fixtures.py): two reports of one log are the same bytes, a graph past
the view limit still has a view, the upload limit is the limits table's `trace_upload_bytes`
(raised, it lets a larger upload in), repeated uploads leave the server's memory flat, and equal
graph texts share one parse.
Timings against tlparse are bench/trace_scale_bench.py's (no timed test).
"""

from __future__ import annotations

import io
import json
import re
import tracemalloc

import pytest

from app import create_app
from compiler_core import graph_view, report_html
from compiler_core.present.layout import DOT_VIEW_ITEMS
from compiler_core.report import trace_log
from compiler_core.report.trace_log import trace_result
from test_trace_import_tlparse import rank_folder

pytest_plugins = ["test_trace_import_fixtures"]

BOOT = re.compile(r'<script type="application/json" id="boot">(.*?)</script>', re.S)
MiB = 1 << 20


def test_two_reports_of_one_log_are_the_same_bytes(encoder_log, monkeypatch):
    """Which views `dot` lays out is a budget of items, not of seconds: the server's layout time
    limit (here all but none) does not decide a report's views, nor does the machine's speed."""
    monkeypatch.setenv("TORCHBOLT_LIMIT_LAYOUT_SECONDS", "0.001")
    log = encoder_log
    first, second = (report_html("", {}, trace_result({log.name: log})) for _ in range(2))
    assert first == second
    views = json.loads(BOOT.search(first)[1])["report"]["graphs"]
    small = [v for v in views.values() if len(v["nodes"]) <= DOT_VIEW_ITEMS]
    assert any(v["engine"] == "dot" for v in small)
    assert all(v["engine"] == "dot" or "report's dot budget" in v["layout_note"] for v in small), \
        [v["layout_note"] for v in small]


@pytest.mark.parametrize("dot_items", [None, 10**6])
def test_a_recompiles_views_are_made_once_and_the_report_is_the_same(encoder_log, monkeypatch,
                                                                     dot_items):
    """The encoder's recompiles are answered by Inductor's caches and print the same graphs:
    their views are the first compile's with their own compile id, not laid out again, where the
    report's dot budget gives them the same layout (a budget no view reaches: all of them), and
    the report is the same bytes as one where every view is made."""
    from compiler_core.present import static_html
    if dot_items:
        monkeypatch.setattr(static_html, "DOT_REPORT_ITEMS", dot_items)
    result = trace_result({encoder_log.name: encoder_log})
    made = []
    monkeypatch.setattr(static_html, "graph_view", lambda compiled, stage, *args, view=static_html
                        .graph_view, **kwargs: made.append((compiled["id"], stage))
                        or view(compiled, stage, *args, **kwargs))
    reused = report_html("", {}, result)
    views = json.loads(BOOT.search(reused)[1])["report"]["graphs"]
    recompiled = [key.split() for key in views if key.startswith(("0/1 ", "0/2 "))]
    assert len(recompiled) >= 8 and len(made) < len(views)
    if dot_items:
        assert not set(map(tuple, recompiled)) & set(made), made
        assert views["0/2 aot_joint"]["compile_id"] == "0/2"
        assert views["0/2 aot_joint"]["nodes"] == views["0/0 aot_joint"]["nodes"]
    monkeypatch.setattr(static_html, "_view_inputs", lambda *args: None)  # made every time
    assert report_html("", {}, result) == reused


def test_a_graph_too_large_to_show_whole_is_cut_into_runs(encoder_log, monkeypatch):
    """A log's AOT graphs have no module stacks; past the `graph_nodes_laid_out` limit (here 100)
    the view shows runs of consecutive nodes, each opening on its own, every node in one."""
    monkeypatch.setenv("TORCHBOLT_LIMIT_GRAPH_NODES_LAID_OUT", "100")
    result = trace_result({encoder_log.name: encoder_log})
    compiled = result["compiles"][0]
    view = graph_view(compiled, "aot_joint", result)
    runs = [n for n in view["nodes"] if n["kind"] == "group"]  # "auto" may open the first
    assert runs and len(view["nodes"]) <= 100 and view["edges"]
    assert sum(r["size"] for r in runs) == len(view["hidden"]) == view["total_nodes"] - (
        len(view["nodes"]) - len(runs))
    assert {h["chain"][0] for h in view["hidden"]} == {r["id"] for r in runs}
    opened = graph_view(compiled, "aot_joint", result, expand=[runs[0]["id"]])
    shown = [n for n in opened["nodes"] if n["kind"] == "node"]
    assert len(shown) == runs[0]["size"] and len(opened["nodes"]) <= 100


@pytest.fixture(scope="module")
def uploads(tmp_path_factory):
    """A test client of an app with no workers: uploads are read by the helper process alone."""
    app = create_app({"TESTING": True, "DATA_DIR": str(tmp_path_factory.mktemp("store")),
                      "WARM_FIRST_LESSON": False, "SUBMIT_BURST": 10_000}, workers=[])
    return app.test_client()


def upload(client, *files: tuple[bytes, str]):
    return client.post("/api/trace", data={"log": [(io.BytesIO(b), n) for b, n in files]})


def test_the_upload_limit_is_the_limits_tables(uploads, encoder_log, monkeypatch):
    """Past the 64 MiB default, a 413; with `TORCHBOLT_LIMIT_TRACE_UPLOAD_BYTES` raised, the same
    upload is read (the log, and 63 MiB of lines that are no trace entries), and the catalogue
    says the raised value."""
    files = ((encoder_log.read_bytes(), encoder_log.name),
             ((b"x" * 1023 + b"\n") * (63 * 1024), "padding.log"))
    assert sum(len(b) for b, _ in files) > 64 * MiB
    assert upload(uploads, *files).status_code == 413
    monkeypatch.setenv("TORCHBOLT_LIMIT_TRACE_UPLOAD_BYTES", str(80 * MiB))
    answer = upload(uploads, *files)
    assert answer.status_code == 200, answer.get_json()
    stored = uploads.get(f"/api/results/{answer.get_json()['key']}").get_json()
    assert [c["id"] for c in stored["result"]["compiles"]][:2] == ["0/0", "0/1"]
    limits = {x["name"]: x["value"] for x in uploads.get("/api/catalogue").get_json()["limits"]}
    assert limits["trace_upload_bytes"] == 80 * MiB


def test_repeated_uploads_leave_the_server_memory_flat(uploads, encoder_log):
    """The helper process answers with the result's stored form, which the server stores as it
    is: an upload never brings its result into the server's memory (at its peak, the body and
    less than half the result's JSON), and repeated uploads keep nothing."""
    body = encoder_log.read_bytes()
    result_json = len(json.dumps(trace_result({encoder_log.name: encoder_log})))
    assert upload(uploads, (body, encoder_log.name)).status_code == 200
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(4):
            assert upload(uploads, (body, encoder_log.name)).status_code == 200
        now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert now - start < 512 * 1024
    assert peak - start < len(body) + result_json // 2, (peak - start, len(body), result_json)


def test_equal_graph_texts_of_two_compiles_share_one_parse(encoder_log, monkeypatch):
    """A recompile that Inductor's caches answer prints the same graphs again: the second copy
    of a text (another string object) is not parsed again, and gets the same rows."""
    from compiler_core.parsers import fxgraph
    result = trace_result({encoder_log.name: encoder_log})
    stage = next(s for c in result["compiles"] for s in c["stages"].values()
                 if s.get("text", "").count("def forward") == 1 and s.get("src_lines"))
    copies = ["".join(list(stage["text"])) for _ in range(2)]
    assert copies[0] is not copies[1]
    parses = []
    monkeypatch.setattr(fxgraph, "_parsed", type(fxgraph._parsed)())
    monkeypatch.setattr(fxgraph, "_parse_graphs",
                        lambda text, lines, parse=fxgraph._parse_graphs: parses.append(text)
                        or parse(text, lines))
    first, second = (fxgraph.fx_nodes(text, stage["src_lines"]) for text in copies)
    assert len(parses) == 1 and first == second and len(first) > 10


def test_a_parse_holds_each_node_once_in_a_few_hundred_bytes(encoder_log, monkeypatch):
    """A text's graphs and its node rows are one set of dicts, which a stage without module
    stacks gets as they are, and their equal strings and lists are one object each: the joint
    graph's parse holds under 600 bytes a node (520 here; 1,590 when the rows were copies of the
    graphs' nodes and a stage's rows copies again, each with strings and lists of its own)."""
    from compiler_core.parsers import fxgraph
    stage = trace_result({encoder_log.name: encoder_log})["compiles"][0]["stages"]["aot_joint"]
    text = "".join(list(stage["text"]))  # a string of its own, of which no parse is kept
    monkeypatch.setattr(fxgraph, "_parsed", type(fxgraph._parsed)())
    tracemalloc.start()
    try:
        rows = fxgraph.stage_nodes({"text": text, "src_lines": stage["src_lines"]})
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    nodes = [node for graph in fxgraph.parse_graphs(text, stage["src_lines"])
             for node in graph.nodes.values()]
    assert len(rows) > 100 and all(row is node for row, node in zip(rows, nodes, strict=True))
    assert held / len(rows) < 600, held / len(rows)


def test_the_boot_data_is_written_a_stage_at_a_time(encoder_log):
    """The report's boot data is jinja's `tojson` of it, written in parts: no part is held
    whole larger than a stage's JSON (a compile's whole, written at once, held the largest
    compile at the peak)."""
    from compiler_core.present.static_html import STREAMED_LEVELS, _html_safe, _write_json
    result = trace_result({encoder_log.name: encoder_log})
    boot = {"share": {"result": result}}
    largest = max(len(json.dumps(c)) for c in result["compiles"])
    written = io.StringIO()
    _write_json(written, boot, STREAMED_LEVELS)  # as write_report: boot > share > result
    assert written.getvalue() == _html_safe(json.dumps(boot, sort_keys=True))
    parts = []
    tracemalloc.start()
    try:
        _write_json(type("Sizes", (), {"write": lambda self, s: parts.append(len(s))})(), boot,
                    STREAMED_LEVELS)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert max(parts) < largest // 2 and peak < largest, (max(parts), peak, largest)


def test_equal_stage_texts_of_recompiles_are_held_once(encoder_log):
    """A recompile that Inductor's caches answer makes the same joined texts again (its
    post-grad graphs and output code, forward and backward): the result holds each once."""
    result = trace_result({encoder_log.name: encoder_log})
    for stage in ("post_grad_graph", "output_code"):
        texts = [c["stages"][stage]["text"] for c in result["compiles"] if stage in c["stages"]]
        assert len(texts) >= 3 and len(set(texts)) < len(texts)
        assert len({id(t) for t in texts}) == len(set(texts)), stage


def test_a_recompiles_equal_rows_are_held_once(encoder_log):
    """A recompile's guards differ from the last compile's in a few rows (the global's value):
    each equal row is the last compile's, held once, and so is the line map of an equal text."""
    result = trace_result({encoder_log.name: encoder_log})
    last, now = (next(c["stages"] for c in result["compiles"] if c["id"] == compile_id)
                 for compile_id in ("0/1", "0/2"))
    rows = list(zip(last["guards"]["guards"], now["guards"]["guards"]))
    shared = sum(a is b for a, b in rows)
    assert shared == sum(a == b for a, b in rows) and len(rows) // 2 < shared < len(rows)
    assert now["post_grad_graph"]["src_lines"] is last["post_grad_graph"]["src_lines"]


def test_a_multi_rank_folder_is_built_rank_by_rank(tmp_path, monkeypatch):
    """Each rank's result is built once its log is read, and its records let go: when a rank is
    built, two ranks' records are held at most (its own and the lowest rank's, built last: its
    notes name the folder), not every rank's. Three ranks: the recorded run's two and a copy of
    rank 1's log as rank 2."""
    names = rank_folder(tmp_path / "logs", "recorded")
    files = {name: tmp_path / "logs" / name for name in names.values()}
    files["dedicated_log_torch_trace_rank_2_copy.log"] = files[names[1]]
    parsed, held = [], []
    monkeypatch.setattr(trace_log, "parse_log", lambda *args, parse=trace_log.parse_log:
                        parsed.append(parse(*args)) or parsed[-1])
    monkeypatch.setattr(trace_log, "log_result", lambda log, *args, build=trace_log.log_result:
                        held.append(sum(bool(p.records) for p in parsed)) or build(log, *args))
    result = trace_result(files)
    assert len(held) == 3 and max(held) == 2, held
    ids = [c["id"] for c in result["compiles"]]
    assert [i.split("]")[0] for i in ids if i.endswith(" 0/0")] == ["[rank 0", "[rank 1",
                                                                   "[rank 2"]
    assert [i for i in ids if i.startswith("[rank 2]")] == [
        i.replace("[rank 1]", "[rank 2]") for i in ids if i.startswith("[rank 1]")]
    assert result["notes"][1].startswith("Ranks 0, 1, 2 of a multi-process run")
