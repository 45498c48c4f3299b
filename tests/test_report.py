"""Static reports (issue 11, part 8): one HTML file that opens from disk with no server, from a
script's run or from a real TORCH_TRACE log, and the page's download and trace-upload endpoints.

The log comes from a real run: a gallery example in a subprocess with TORCH_TRACE=DIR. tlparse
(the reference reader of these logs) reads the same log as an independent check.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig

import pytest

from compiler_core.gallery import get_example
from compiler_core.report.trace_log import parse_log, trace_result
from plain_trace import traced_folder

pytest_plugins = ["test_app_fixtures"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BREAK = get_example("print_graph_break")
BOOT = re.compile(r'<script type="application/json" id="boot">(.*?)</script>', re.S)
# Anything a browser would load from elsewhere: a src/href/url()/import that is not a data URL
# or a fragment (links to PyTorch's docs inside the result are text, not loads).
EXTERNAL_LOAD = re.compile(r'''(?:\bsrc=["']?|<link[^>]*href=["']?|url\(["']?|\bimport\s*\(?\s*["'])(?!data:|#|torchbolt/)[\w/.]''')


def boot_of(html: str) -> dict:
    return json.loads(BOOT.search(html)[1])


def cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "compiler_core", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory):
    """The log folder of a real run of the print-graph-break example under TORCH_TRACE."""
    _, folder = traced_folder([BREAK.path], tmp_path_factory.mktemp("torch_trace"))
    assert [n for n in os.listdir(folder) if n.endswith(".log")], os.listdir(folder)
    return folder


def log_files(folder) -> dict[str, str]:
    return {n: (folder / n).read_text() for n in os.listdir(folder) if n.endswith(".log")}


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    """The CLI's report of the gallery example, as a speaker would write it."""
    out = tmp_path_factory.mktemp("report") / "report.html"
    proc = cli("report", BREAK.path, "-o", str(out), "--device", "cpu", "--no-measure")
    assert proc.returncode == 0, proc.stderr
    return out


# ---------------------------------------------------------------- the TORCH_TRACE log reader
def test_a_trace_log_gives_the_dynamo_graph_guards_and_break(trace_dir):
    result = trace_result(log_files(trace_dir))
    assert result["user_file"] == BREAK.path  # the script the log is about, from its frames
    assert [c["id"] for c in result["compiles"]] == ["0/0", "1/0"]
    first = result["compiles"][0]
    assert {"dynamo_graph", "guards", "aot_inference", "output_code"} <= set(first["stages"])
    graph = first["stages"]["dynamo_graph"]
    assert "torch.sin" in graph["text"] and 12 in graph["src_lines"]  # y = torch.sin(x) * 2
    assert "TENSOR_MATCH" in first["stages"]["guards"]["text"]
    (brk,) = result["graph_breaks"]
    assert (brk["line"], brk["gb_code"], brk["resumes_in"]) == (17, "GB0059", "1/0")
    assert result["environment"]["torch"].startswith("2.")
    assert result["stage_errors"] == []


def test_the_log_yields_what_a_run_in_torchbolt_yields(trace_dir, gallery_results):
    """Same compiles, same break, and each stage the log holds is one the engine shows too."""
    logged = trace_result(log_files(trace_dir))
    engine = gallery_results[BREAK.slug]
    assert [c["id"] for c in logged["compiles"]] == [c["id"] for c in engine["compiles"]]
    for ours, theirs in zip(logged["compiles"], engine["compiles"]):
        assert set(ours["stages"]) <= set(theirs["stages"])
        assert ours["census"]["dynamo_graph"] == theirs["census"]["dynamo_graph"]
    assert [(b["line"], b["gb_code"]) for b in logged["graph_breaks"]] == [
        (b["line"], b["gb_code"]) for b in engine["graph_breaks"]]


def test_tlparse_reads_the_same_compiles(trace_dir, tmp_path):
    tlparse = shutil.which("tlparse") or os.path.join(sysconfig.get_path("scripts"), "tlparse")
    (name, text), = log_files(trace_dir).items()
    proc = subprocess.run([tlparse, str(trace_dir / name), "-o", str(tmp_path / "tl"),
                           "--no-browser", "--overwrite"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    directory = json.loads((tmp_path / "tl" / "compile_directory.json").read_text())
    theirs = {cid.strip("[]").split("_")[0] for cid in directory} - {"-/-"}  # 0/0_1: attempt 1
    assert theirs == {c["id"] for c in trace_result({name: text})["compiles"]}


def test_untrusted_log_lines_are_skipped_not_fatal(trace_dir):
    (name, text), = log_files(trace_dir).items()
    clean = parse_log(name, text)
    mangled = ("not a log line\n"
               "V1201 00:00:00.000000 1 x.py:1] {not json\n"
               'V1201 00:00:00.000000 1 x.py:1] {"artifact": 3}\n'
               'V1201 00:00:00.000000 1 x.py:1] {"str": "no index"}\n' + text)
    log = parse_log(name, mangled)
    assert log.skipped_lines == 4
    assert [r["payload"] for r in log.records] == [r["payload"] for r in clean.records]
    with pytest.raises(ValueError, match="no structured-trace entries"):
        trace_result({"notes.txt": "hello\n"})


def test_one_rank_at_a_time(trace_dir):
    (name, text), = log_files(trace_dir).items()
    files = {"dedicated_log_torch_trace_rank_1_a.log": text,
             "dedicated_log_torch_trace_rank_0_b.log": text}
    result = trace_result(files)
    assert result["environment"]["trace_log"] == "dedicated_log_torch_trace_rank_0_b.log"
    assert any("rank_1_a.log (rank 1)" in note for note in result["notes"])
    assert trace_result(files, rank=1)["environment"]["trace_log"].startswith(
        "dedicated_log_torch_trace_rank_1")
    with pytest.raises(ValueError, match="no log of rank 5"):
        trace_result(files, rank=5)


# ---------------------------------------------------------------- the report file
def test_the_cli_writes_one_self_contained_file(report_file):
    html = report_file.read_text()
    assert os.listdir(report_file.parent) == ["report.html"]
    assert not EXTERNAL_LOAD.search(html), EXTERNAL_LOAD.search(html)[0]
    boot = boot_of(html)
    assert boot["share"]["source"] == BREAK.source
    assert boot["share"]["options"]["device"] == "cpu"
    result = boot["share"]["result"]
    assert [c["id"] for c in result["compiles"]] == ["0/0", "1/0"]
    assert set(boot["report"]["graphs"]) >= {"0/0 dynamo_graph", "1/0 post_grad_graph"}
    assert boot["report"]["assets"]["vendor/plotly.min.js"].startswith("data:text/javascript")


def test_the_report_opens_from_disk_with_no_server(report_file, browser):
    context = browser.new_context(viewport={"width": 1600, "height": 900})
    page = context.new_page()
    problems, loads = [], []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("console", lambda m: m.type == "error" and problems.append(f"console: {m.text}"))
    page.on("request", lambda r: loads.append(r.url[:60]))
    page.goto(report_file.as_uri())
    page.wait_for_selector("body[data-ready='1'][data-mode='report']")
    first = page.locator(".pane[data-index='0']")
    assert "torch.sin" in first.locator(".cm-content").inner_text()  # the Dynamo graph's text
    first.get_by_role("button", name="Graph").click()
    page.wait_for_selector(".pane[data-index='0'] .pane-body.graph[data-ready='1']")
    page.click("#run [data-tab=breaks]")
    assert "GB0059" in page.locator("#run .tab-panel.breaks").inner_text()
    assert page.locator("#compile").is_hidden() and page.locator("#download").is_hidden()
    os.makedirs(os.path.join(ROOT, "test-artifacts"), exist_ok=True)
    page.screenshot(path=os.path.join(ROOT, "test-artifacts", "static_report.png"))
    context.close()
    assert not problems
    assert all(url.startswith(("file:", "data:")) for url in loads), loads


def test_the_cli_reports_a_trace_folder(trace_dir, tmp_path):
    out = tmp_path / "trace.html"
    proc = cli("report", "--trace-dir", str(trace_dir), "--source", BREAK.path, "-o", str(out),
               timeout=120)
    assert proc.returncode == 0, proc.stderr
    boot = boot_of(out.read_text())
    result = boot["share"]["result"]
    assert boot["share"]["source"] == BREAK.source
    assert "torch.sin" in result["compiles"][0]["stages"]["dynamo_graph"]["text"]
    assert "guards" in result["compiles"][1]["stages"]
    assert "0/0 dynamo_graph" in boot["report"]["graphs"]
    assert cli("report", "-o", str(out)).returncode == 2  # a script or a folder, one of them


# ---------------------------------------------------------------- the web app's endpoints
def test_download_report_of_a_stored_result(client, compiled):
    job = compiled(BREAK.source, device="cpu", measure=False)
    response = client.get(f"/api/results/{job['key']}/report.html")
    assert response.status_code == 200
    assert response.headers["Content-Disposition"] == (
        f'attachment; filename="torchbolt-{job["key"]}.html"')
    boot = boot_of(response.get_data(as_text=True))
    assert boot["share"]["source"] == BREAK.source
    assert boot["share"]["result"]["graph_breaks"][0]["gb_code"] == "GB0059"
    assert client.get(f"/api/results/{'0' * 20}/report.html").status_code == 404


def test_upload_a_trace_log(client, trace_dir, monkeypatch):
    (name, text), = log_files(trace_dir).items()
    response = client.post("/api/trace", data={"log": [(open(trace_dir / name, "rb"), name)]})
    assert response.status_code == 200, response.get_json()
    key = response.get_json()["key"]
    stored = client.get(f"/api/results/{key}").get_json()
    assert [c["id"] for c in stored["result"]["compiles"]] == ["0/0", "1/0"]
    assert stored["source"].startswith("# No source")
    assert client.get(f"/r/{key}").status_code == 200
    graph = client.get(f"/api/results/{key}/graph?compile=0/0&stage=dynamo_graph").get_json()
    assert graph["ok"] and any(n["name"] == "sin" for n in graph["nodes"])
    bad = client.post("/api/trace", data={"log": [(open(__file__, "rb"), "x.log")]})
    assert bad.status_code == 400 and "not a TORCH_TRACE log" in bad.get_json()["error"]
    monkeypatch.setenv("TORCHBOLT_LIMIT_TRACE_UPLOAD_BYTES", "1000")
    big = client.post("/api/trace", data={"log": [(open(trace_dir / name, "rb"), name)]})
    assert big.status_code == 413 and big.get_json()["ok"] is False
