"""The JSON API through Flask's test client, on the real engine (one warm worker, CPU)."""

from __future__ import annotations

import json
import time

import pytest

from app import create_app
from compiler_core import Job, Options
from compiler_core.gallery import get_example
from compiler_core.report.result import build_result

from test_app_fixtures import wait_for_handle

pytest_plugins = ["test_app_fixtures"]

TINY = "import torch\n\n\ndef f(x):\n    return (x.sin() * 2).relu()\n\n\nprint(torch.compile(f)(torch.ones(4)).sum().item())\n"
BREAK = get_example("print_graph_break").source


def sse_events(response) -> list[tuple[str, dict]]:
    events = []
    for block in response.get_data(as_text=True).split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines()
                      if ": " in line and not line.startswith(":"))
        if "event" in fields:
            events.append((fields["event"], json.loads(fields["data"])))
    return events


def test_compile_then_poll_gives_every_stage(compiled):
    job = compiled(TINY)
    assert job["ok"] and job["status"] == "done" and not job["cached"]
    result = job["result"]
    assert result["error"] is None and float(result["stdout"]) == pytest.approx(8 * 0.841471, rel=1e-4)
    assert result["environment"]["torch"].startswith("2.")
    stages = result["compiles"][0]["stages"]
    for stage in ("dynamo_graph", "guards", "aot_inference", "post_grad_graph", "output_code"):
        assert stages[stage]["text"], stage


def test_events_stream_stages_then_done(client):
    job = client.post("/api/compile", json={"source": TINY + "# events\n"}).get_json()
    response = client.get(f"/api/jobs/{job['handle']}/events")
    assert response.mimetype == "text/event-stream"
    events = sse_events(response)
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "status" and kinds[-1] == "done" and kinds.count("done") == 1
    stages = [data["stage"] for kind, data in events if kind == "stage"]
    assert "dynamo_graph" in stages and "output_code" in stages
    assert stages.index("dynamo_graph") < stages.index("output_code")
    assert events[-1][1]["status"] == "done"


def test_events_resume_after_last_event_id(client, compiled):
    job = compiled(TINY)
    everything = sse_events(client.get(f"/api/jobs/{job['handle']}/events"))
    rest = sse_events(client.get(f"/api/jobs/{job['handle']}/events", headers={"Last-Event-ID": "2"}))
    assert rest == everything[3:]


def test_identical_submit_is_served_from_the_store(client, compiled):
    first = compiled(BREAK)
    started = time.perf_counter()
    again = client.post("/api/compile", json={"source": BREAK, "options": {}}).get_json()
    job = client.get(f"/api/jobs/{again['handle']}").get_json()
    latency = time.perf_counter() - started
    assert again["cached"] and again["key"] == first["key"] and job["status"] == "done"
    assert job["result"]["compiles"] == first["result"]["compiles"]
    assert latency < 0.5, f"cache hit took {latency:.3f} s"


def test_share_page_loads_code_and_result(client, compiled):
    job = compiled(BREAK)
    page = client.get(f"/r/{job['key']}")
    assert page.status_code == 200 and page.mimetype == "text/html"
    boot = page.get_data(as_text=True).split('<script type="application/json" id="boot">')[1]
    boot = json.loads(boot.split("</script>")[0])
    assert boot["share"]["source"] == BREAK
    assert [b["line"] for b in boot["share"]["result"]["graph_breaks"]] == [17]
    assert client.get(f"/api/results/{job['key']}").get_json()["source"] == BREAK


def test_results_survive_a_restart(app, compiled):
    job = compiled(BREAK)
    restarted = create_app({"TESTING": True, "DATA_DIR": app.config["DATA_DIR"], "WORKERS": 0})
    client = restarted.test_client()
    assert client.get(f"/api/results/{job['key']}").get_json()["result"]["graph_breaks"]
    assert client.get(f"/r/{job['key']}").status_code == 200
    refused = client.post("/api/compile", json={"source": TINY})
    assert refused.status_code == 503 and refused.get_json()["ok"] is False


def test_user_errors_are_data_not_http_errors(compiled):
    syntax = compiled("import torch\n\ndef f(x:\n    return x\n")
    assert syntax["status"] == "failed"
    assert syntax["result"]["error"]["type"] == "SyntaxError"
    assert syntax["result"]["error"]["line"] == 3
    raised = compiled("import torch\n\n\nraise ValueError('boom')\n")["result"]["error"]
    assert (raised["type"], raised["message"], raised["line"]) == ("ValueError", "boom", 4)


def test_timeout_says_so_and_is_not_reused(client, compiled):
    job = compiled("import time\n\nwhile True:\n    time.sleep(0.01)\n", timeout=1)
    error = job["result"]["error"]
    assert error["type"] == "Timeout" and "1 s limit" in error["message"] and error["line"] == 4
    again = client.post("/api/compile", json={"source": "import time\n\nwhile True:\n    time.sleep(0.01)\n",
                                              "options": {"timeout": 1}}).get_json()
    assert not again["cached"]
    wait_for_handle(client, again["handle"])


def test_cancel_stops_a_running_job(client):
    job = client.post("/api/compile", json={"source": "import time\ntime.sleep(60)\n"}).get_json()
    while client.get(f"/api/jobs/{job['handle']}").get_json()["status"] == "queued":
        time.sleep(0.05)
    assert client.post(f"/api/jobs/{job['handle']}/cancel").get_json()["ok"]
    done = wait_for_handle(client, job["handle"], timeout=20)
    assert done["result"]["error"]["type"] == "Cancelled"


def test_graph_of_a_stage(client, compiled):
    job = compiled(BREAK)
    graph = client.get(f"/api/results/{job['key']}/graph?compile=1/0&stage=aot_inference").get_json()
    names = {node["name"] for node in graph["nodes"]}
    assert {"arg0_1", "cos", "add", "output"} <= names
    assert graph["engine"] in ("dot", "layered") and len(graph["edges"]) == 3
    by_name = {node["name"]: node for node in graph["nodes"]}
    assert by_name["cos"]["line"] == 20 and by_name["cos"]["shape"] == ["8", "16"]
    assert by_name["arg0_1"]["y"] < by_name["output"]["y"]  # inputs on top (y grows downwards)


def test_gallery(client):
    examples = client.get("/api/gallery").get_json()["examples"]
    assert examples[0]["slug"] == "print_graph_break" and "source" not in examples[0]
    example = client.get("/api/gallery/print_graph_break").get_json()
    assert example["source"] == BREAK


BAD_REQUESTS = [
    ("no body", None, 400),
    ("not JSON", "source=1", 400),
    ("a list", [], 400),
    ("no source", {"options": {}}, 400),
    ("empty source", {"source": "  \n"}, 400),
    ("source not a string", {"source": ["import torch"]}, 400),
    ("huge source", {"source": "x = 1\n" * 20_000}, 413),
    ("body over the limit", {"source": "#" * 2_000_000}, 413),
    ("options not an object", {"source": TINY, "options": "fast"}, 400),
    ("unknown option", {"source": TINY, "options": {"speed": 11}}, 400),
    ("internal option", {"source": TINY, "options": {"memory_mb": 10**6}}, 400),
    ("bad mode", {"source": TINY, "options": {"mode": "ludicrous"}}, 400),
    ("bad device", {"source": TINY, "options": {"device": "tpu"}}, 400),
    ("fullgraph not bool", {"source": TINY, "options": {"fullgraph": "yes"}}, 400),
    ("timeout a string", {"source": TINY, "options": {"timeout": "5"}}, 400),
    ("timeout a bool", {"source": TINY, "options": {"timeout": True}}, 400),
    ("timeout too long", {"source": TINY, "options": {"timeout": 10_000}}, 400),
    ("timeout NaN", {"source": TINY, "options": {"timeout": float("nan")}}, 400),
]


def test_a_body_over_the_limit_names_the_limit(client):
    """Werkzeug's own 413 text ("exceeds the capacity limit") names no limit; ours does."""
    response = client.post("/api/compile", data=json.dumps({"source": "#" * 2_000_000}),
                           content_type="application/json")
    assert_error_shape(response, 413)
    assert "1,048,576 bytes" in response.get_json()["error"]
    assert "/api/compile" in response.get_json()["error"]


@pytest.mark.parametrize("body,status", [(b, s) for _, b, s in BAD_REQUESTS],
                         ids=[name for name, _, _ in BAD_REQUESTS])
def test_bad_compile_requests(client, body, status):
    if body is None:
        response = client.post("/api/compile")
    elif isinstance(body, str):
        response = client.post("/api/compile", data=body, content_type="text/plain")
    else:
        response = client.post("/api/compile", data=json.dumps(body), content_type="application/json")
    assert response.status_code == status
    assert_error_shape(response, status)


def assert_error_shape(response, status):
    data = response.get_json()
    assert set(data) == {"ok", "error", "status"}, data
    assert data["ok"] is False and data["status"] == status and data["error"]


NOT_FOUND = [
    ("get", "/api/jobs/nope", 404),
    ("get", "/api/jobs/nope/events", 404),
    ("post", "/api/jobs/nope/cancel", 404),
    ("get", "/api/results/0123456789abcdef0123", 404),
    ("get", "/api/results/not-a-key", 404),
    ("get", "/api/results/0123456789abcdef0123/graph?compile=0/0&stage=dynamo_graph", 404),
    ("get", "/api/gallery/nope", 404),
    ("get", "/api/nothing-here", 404),
    ("get", "/api/compile", 405),
    ("delete", "/api/jobs/nope", 405),
]


@pytest.mark.parametrize("method,url,status", NOT_FOUND, ids=[u for _, u, _ in NOT_FOUND])
def test_unknown_things(client, method, url, status):
    response = getattr(client, method)(url)
    assert response.status_code == status
    assert_error_shape(response, status)


@pytest.mark.parametrize("query,status", [
    ("compile=9/9&stage=dynamo_graph", 404),
    ("compile=0/0&stage=nope", 404),
    ("compile=0/0&stage=output_code", 400),
    ("compile=0/0&stage=dynamo_graph&collapse=-1", 400),
])
def test_bad_graph_requests(client, compiled, query, status):
    job = compiled(BREAK)
    response = client.get(f"/api/results/{job['key']}/graph?{query}")
    assert_error_shape(response, status)


def test_pages_are_html_errors_and_have_a_strict_policy(client):
    missing = client.get("/r/0123456789abcdef0123")
    assert missing.status_code == 404 and missing.mimetype == "text/html"
    page = client.get("/")
    policy = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split("style-src")[0]


def test_share_page_escapes_user_text(client, compiled):
    source = 'import torch\nprint("</script><script>alert(1)</script><img src=x onerror=alert(2)>")\n'
    job = compiled(source)
    html = client.get(f"/r/{job['key']}").get_data(as_text=True)
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "\\u003c/script\\u003e" in html  # the boot JSON escapes < and >


def test_static_assets_are_vendored_and_gzipped(client):
    for path in ("/static/vendor/codemirror.js", "/static/vendor/plotly.min.js", "/static/js/main.js"):
        response = client.get(path, headers={"Accept-Encoding": "gzip"})
        assert response.status_code == 200 and response.headers["Content-Encoding"] == "gzip", path


def test_partial_results_name_the_script_as_the_job_sees_it(worker):
    """Results built from the records while a job runs map lines by the script's path inside
    the job (the worker reports it when the script starts), the same path as the final result.
    (A server's run frees its records once it ends: the engine's job is asked here.)"""
    job = worker.execute(Job(TINY, Options(measure=False)))
    assert job.user_file == job.result["user_file"]
    partial = build_result(job.records(), job.user_file)
    final_lines = [c["stages"]["dynamo_graph"]["src_lines"] for c in job.result["compiles"]]
    assert [c["stages"]["dynamo_graph"]["src_lines"] for c in partial["compiles"]] == final_lines
    assert any(line for lines in final_lines for line in lines)
