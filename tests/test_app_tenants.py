"""Many people on one server: job handles, per-client fairness and limits, event-stream caps,
access tokens, bad text, and `python -m app`'s start-up rules. Real engine, one warm worker."""

from __future__ import annotations

import http.client
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest

import compiler_core
from app import __main__ as app_main
from app import create_app
from app.serving import exposure_refusal, make_server, sandbox_state
from app.validate import parse_options

from test_app_fixtures import wait_for_handle

pytest_plugins = ["test_app_fixtures"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(app_main.__file__)))
_unique = itertools.count()


def script(body: str) -> str:
    """`body` made unique, so no run is shared with (or cached from) another test's."""
    return f"# tenants test {next(_unique)} {time.time()}\n{body}"


def quick(text: str, seconds: float = 0) -> str:
    """Sleeps, compiles a one-op function with the eager backend (~0.3 s), prints `text`."""
    return script(f"import time\n\nimport torch\n\ntime.sleep({seconds})\n"
                  "torch.compile(lambda x: x + 1, backend='eager')(torch.ones(2))\n"
                  f"print({text!r})\n")


def sleeper(seconds: float) -> str:
    return quick("slept", seconds)


def endless() -> str:
    return script("while True:\n    pass\n")


def client_at(app, address: str):
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = address
    return client


def submit(client, source: str, **options) -> dict:
    response = client.post("/api/compile", json={"source": source, "options": options})
    assert response.status_code == 202, response.get_json()
    return response.get_json()


def wait_status(client, job_id: str, wanted: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data = client.get(f"/api/jobs/{job_id}").get_json()
        if data["status"] == wanted:
            return data
        time.sleep(0.02)
    raise AssertionError(f"job {job_id} never became {wanted}")


def assert_error(response, status: int, *words: str) -> str:
    data = response.get_json()
    assert response.status_code == status and set(data) == {"ok", "error", "status"}, data
    assert data["ok"] is False and data["status"] == status
    for word in words:
        assert word in data["error"], data["error"]
    return data["error"]


@pytest.fixture
def extra_app(worker, tmp_path):
    """An app with its own config over the session's warm worker and a fresh store."""
    def build(**config):
        app = create_app({"TESTING": True, "DATA_DIR": str(tmp_path / "store"), **config},
                         workers=[worker])
        app.extensions["torchbolt.runs"].wait_ready()
        return app
    return build


# ---------------------------------------------------------------- tokens
def test_token_needed_by_api_pages_and_static_files(extra_app):
    app = extra_app(TOKEN="s3cret-token")
    anonymous = app.test_client()
    assert_error(anonymous.get("/api/status"), 401, "token")
    assert_error(anonymous.post("/api/compile", json={"source": "print(1)\n"}), 401)
    assert_error(anonymous.get("/api/status", headers={"Authorization": "Bearer wrong"}), 401)
    for path in ("/", "/static/js/main.js", "/r/0123456789abcdef0123", "/?token=wrong"):
        page = anonymous.get(path)
        assert page.status_code == 401 and page.mimetype == "text/html", path
    # scripts: a bearer token
    bearer = {"Authorization": "Bearer s3cret-token"}
    job = anonymous.post("/api/compile", json={"source": quick("1")}, headers=bearer)
    assert job.status_code == 202
    done = anonymous.get(f"/api/jobs/{job.get_json()['handle']}", headers=bearer)
    assert done.status_code == 200
    # browsers: ?token= on any page sets the cookie and redirects to the URL without it
    browser = app.test_client()
    visit = browser.get("/?example=print_graph_break&token=s3cret-token")
    assert visit.status_code == 303 and visit.headers["Location"] == "/?example=print_graph_break"
    cookie = visit.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "s3cret-token" in cookie
    assert "?token" not in browser.get("/r/x?token=s3cret-token").headers["Location"]
    for path in ("/", "/static/js/main.js", "/api/status"):
        assert browser.get(path).status_code == 200, path
    assert browser.get("/api/status?token=nope").status_code == 200  # the cookie suffices
    while done.get_json()["status"] not in ("done", "failed"):
        time.sleep(0.05)
        done = anonymous.get(f"/api/jobs/{job.get_json()['handle']}", headers=bearer)
    assert done.get_json()["result"]["stdout"] == "1\n"


def test_loopback_serves_without_a_token(client):
    assert client.get("/api/status").status_code == 200
    assert client.get("/static/js/api.js").status_code == 200


# ---------------------------------------------------------------- handles
def test_cancel_detaches_one_handle_and_the_run_goes_on(app):
    a, b = client_at(app, "10.1.0.1"), client_at(app, "10.1.0.2")
    source = sleeper(1.5)
    job_a, job_b = submit(a, source), submit(b, source)
    assert job_a["handle"] != job_b["handle"] and job_a["key"] == job_b["key"]
    cancel = b.post(f"/api/jobs/{job_b['handle']}/cancel").get_json()
    assert cancel["ok"] and cancel["status"] == "failed"
    mine = b.get(f"/api/jobs/{job_b['handle']}").get_json()
    assert mine["status"] == "failed" and mine["result"]["error"]["type"] == "Cancelled"
    assert "keeps running for 1 other submit" in mine["result"]["error"]["message"]
    events = b.get(f"/api/jobs/{job_b['handle']}/events").get_data(as_text=True)
    last = json.loads(events.rstrip().rsplit("data: ", 1)[1])
    assert last["type"] == "done" and last["error"]["type"] == "Cancelled"
    theirs = wait_for_handle(a, job_a["handle"])
    assert theirs["status"] == "done" and theirs["result"]["stdout"] == "slept\n"
    again = submit(b, source)  # the result was stored: a cache hit, answered at once
    assert again["cached"] and again["status"] == "done" and again["handle"] != job_b["handle"]


def test_run_is_cancelled_when_its_last_handle_is(app):
    a, b = client_at(app, "10.2.0.1"), client_at(app, "10.2.0.2")
    source = endless()
    job_a = submit(a, source, timeout=20)
    wait_status(a, job_a["handle"], "running")
    job_b = submit(b, source, timeout=20)
    run = app.extensions["torchbolt.runs"].get(job_a["handle"]).run
    assert app.extensions["torchbolt.runs"].get(job_b["handle"]).run is run  # joined, not re-run
    a.post(f"/api/jobs/{job_a['handle']}/cancel")
    assert not run.job.cancelled
    b.post(f"/api/jobs/{job_b['handle']}/cancel")
    assert run.job.cancelled
    started = time.monotonic()
    while not run.is_finished:
        time.sleep(0.02)
    assert run.result["error"]["type"] == "Cancelled" and time.monotonic() - started < 10


def test_cancel_is_only_through_the_handle(app, client):
    job = submit(client_at(app, "10.3.0.1"), quick("mine"))
    assert_error(client.post(f"/api/jobs/{job['key']}/cancel"), 404)  # a key is not a handle


# ---------------------------------------------------------------- fairness and limits
def test_one_client_cannot_starve_another(app):
    x, y = client_at(app, "10.4.0.1"), client_at(app, "10.4.0.2")
    first = submit(x, sleeper(2))
    wait_status(x, first["handle"], "running")
    backlog = submit(x, endless(), timeout=20)  # FIFO would run this before y's job
    started = time.monotonic()
    small = submit(y, quick("y"))
    y_done = wait_for_handle(y, small["handle"], timeout=30)
    waited = time.monotonic() - started
    x.post(f"/api/jobs/{backlog['handle']}/cancel")
    assert y_done["status"] == "done" and y_done["result"]["stdout"] == "y\n"
    # had x's endless job gone first, y would have waited for its 20 s time limit
    assert waited < 10, f"y waited {waited:.1f} s (x's running job sleeps 2 s)"
    queued = json.loads(y.get(f"/api/jobs/{small['handle']}/events").get_data(as_text=True)
                        .split("data: ", 1)[1].split("\n", 1)[0])
    assert queued == {"type": "status", "status": "queued", "position": 1}
    assert wait_for_handle(x, first["handle"])["status"] == "done"


def test_the_fair_queue_takes_runs_by_round_then_queued_order():
    """Each of a client's waiting runs takes a round of its own; within a round, queued order
    decides, so a client never served does not jump ahead of one that queued first."""
    queue = compiler_core.FairQueue()
    for client, item in [("x", "x1"), ("x", "x2"), ("y", "y1"), ("y", "y2")]:
        queue.put(client, item)
    assert [queue.get(), queue.get()] == ["x1", "y1"]  # x2 waits a round: y1 goes first
    assert queue.position_for("x") == 3 and queue.position_for("z") == 1
    assert queue.get() == "x2"  # round 1 now, where y2 waits
    queue.put("z", "z1")  # round 1 too, queued after y2
    queue.put("y", "y3")
    assert queue.remove("y3") and not queue.remove("y3")
    assert [queue.get(), queue.get(), queue.qsize()] == ["y2", "z1", 0]


def test_third_concurrent_job_of_a_client_is_refused(app):
    x, other = client_at(app, "10.5.0.1"), client_at(app, "10.5.0.2")
    jobs = [submit(x, endless(), timeout=20) for _ in range(2)]
    try:
        assert_error(x.post("/api/compile", json={"source": endless()}), 429, "2 jobs")
        source = sleeper(0.1)
        shared = submit(other, source)
        assert_error(x.post("/api/compile", json={"source": source}), 429)  # joining counts too
        x.post(f"/api/jobs/{jobs[1]['handle']}/cancel")
        jobs[1] = submit(x, source)  # the cancel freed a slot
        assert jobs[1]["key"] == shared["key"]
    finally:
        for job in jobs:
            x.post(f"/api/jobs/{job['handle']}/cancel")
    assert x.get(f"/api/jobs/{jobs[0]['handle']}").get_json()["result"]["error"]["type"] == "Cancelled"
    wait_for_handle(other, shared["handle"])


def test_timeout_cap(extra_app, tmp_path):
    default = create_app({"TESTING": True, "DATA_DIR": str(tmp_path / "default")}, workers=[])
    error = assert_error(default.test_client().post(
        "/api/compile", json={"source": "print(1)\n", "options": {"timeout": 121}}), 400)
    assert "at most 120 s" in error and "--max-timeout" in error
    app = extra_app(MAX_TIMEOUT=300)
    job = submit(app.test_client(), quick("2"), timeout=300)
    assert wait_for_handle(app.test_client(), job["handle"])["status"] == "done"
    low = create_app({"TESTING": True, "DATA_DIR": app.config["DATA_DIR"], "MAX_TIMEOUT": 30},
                     workers=[])
    with low.test_request_context():
        assert parse_options({}).timeout == 30  # the default follows a lower cap
        assert parse_options({"timeout": 5}).timeout == 5


def test_source_with_a_lone_surrogate_is_a_400(client):
    body = '{"source": "import torch\\nx = 1\\nprint(\\"ab\\ud800\\")\\n"}'
    response = client.post("/api/compile", data=body, content_type="application/json")
    assert_error(response, 400, "line 3, column 10", "U+D800", "surrogate")


# ---------------------------------------------------------------- event streams
def test_open_streams_per_client_are_capped(app):
    x, y = client_at(app, "10.6.0.1"), client_at(app, "10.6.0.2")
    job = submit(x, sleeper(30), timeout=40)
    url = f"/api/jobs/{job['handle']}/events"
    streams = [x.get(url, buffered=False) for _ in range(4)]
    try:
        assert [s.status_code for s in streams] == [200] * 4
        refused = x.get(url)
        assert_error(refused, 429, "4 open event streams")
        assert refused.headers["Retry-After"]
        streams.append(y.get(url, buffered=False))  # another client still may
        assert streams[-1].status_code == 200
    finally:
        for stream in streams:
            stream.close()
        x.post(f"/api/jobs/{job['handle']}/cancel")
    streams = app.extensions["torchbolt.streams"]
    assert streams.count("10.6.0.1") == streams.count("10.6.0.2") == 0  # slots given back


def first_status(sock: socket.socket) -> int:
    sock.settimeout(10)
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return int(data.split(b" ", 2)[1])


def test_status_answers_at_once_with_200_streams_open(extra_app):
    """A live waitress server with 16 threads: 200 raw connections (of 200 clients) ask for a
    running job's events and stay open; /api/status must still answer within a second."""
    app = extra_app(THREADS=16, STREAMS_PER_CLIENT=1000)  # only the total cap protects
    server = make_server(app, "127.0.0.1", 0, threads=16)
    threading.Thread(target=server.run, daemon=True).start()
    port, local = server.effective_port, app.test_client()
    job = submit(local, endless(), timeout=20)
    request = f"GET /api/jobs/{job['handle']}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    sockets, latencies = [], []

    def status_latency() -> float:
        started = time.perf_counter()
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", "/api/status")
        response = connection.getresponse()
        assert response.status == 200 and json.loads(response.read())["ok"]
        connection.close()
        return time.perf_counter() - started

    try:
        for i in range(200):  # one address each: a client may hold 16 connections
            sockets.append(socket.create_connection(("127.0.0.1", port),
                                                    source_address=(f"127.0.1.{1 + i}", 0)))
            sockets[-1].sendall(request)
        latencies.append(status_latency())  # while the 200 are being answered
        statuses = [first_status(s) for s in sockets]
        latencies.append(status_latency())  # with 8 streams held open
        assert statuses.count(200) == 16 - 8 and statuses.count(429) == 192
        assert app.extensions["torchbolt.streams"].count() == 8
    finally:
        for sock in sockets:
            sock.close()
        local.post(f"/api/jobs/{job['handle']}/cancel")
        server.close()
    print(f"/api/status under 200 event streams: {latencies[0] * 1000:.0f} ms while "
          f"connecting, {latencies[1] * 1000:.0f} ms with 8 open")
    assert max(latencies) < 1.0, latencies


# ---------------------------------------------------------------- python -m app
class StopHere(Exception):
    pass


@pytest.fixture
def started_config(monkeypatch):
    """Runs `app.__main__.main(argv)` up to create_app; returns its config and what it said."""
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    seen = {}

    def fake_create_app(config):
        seen.update(config)
        raise StopHere

    monkeypatch.setattr(app_main, "create_app", fake_create_app)

    def start(argv, ok=True, reason=""):
        monkeypatch.setattr(compiler_core, "sandbox_check",
                            lambda: SimpleNamespace(ok=ok, reason=reason), raising=False)
        with pytest.raises((StopHere, SystemExit)) as stopped:
            app_main.main(argv)
        return stopped.value, seen
    yield start
    for sig, handler in handlers.items():
        signal.signal(sig, handler)


def test_no_sandbox_means_no_exposure(started_config, capsys):
    stopped, _ = started_config(["--host", "0.0.0.0"], ok=False, reason="no user namespaces")
    assert isinstance(stopped, SystemExit) and stopped.code == 2
    error = capsys.readouterr().err
    assert "refusing to serve on 0.0.0.0" in error and "no user namespaces" in error
    assert "--unsafe-no-sandbox" in error
    stopped, config = started_config(["--host", "0.0.0.0", "--unsafe-no-sandbox"], ok=False,
                                     reason="no user namespaces")
    assert isinstance(stopped, StopHere) and config["SANDBOX"] is False
    assert "NOT sandboxed" in capsys.readouterr().out
    stopped, config = started_config([], ok=False, reason="no user namespaces")  # loopback
    assert isinstance(stopped, StopHere) and config["SANDBOX"] is None and config["TOKEN"] is None
    assert "NOT sandboxed: no user namespaces" in capsys.readouterr().out


def test_exposed_server_gets_a_token_and_caps(started_config, capsys):
    _, config = started_config(["--host", "0.0.0.0", "--max-timeout", "300"], ok=True)
    assert len(config["TOKEN"]) >= 32 and config["MAX_TIMEOUT"] == 300
    assert config["SANDBOX"] is None and "jobs are sandboxed" in capsys.readouterr().out
    _, config = started_config(["--host", "10.0.0.7", "--token", "T"], ok=True)
    assert config["TOKEN"] == "T"
    _, config = started_config(["--token", "T"], ok=True)  # loopback with an explicit token
    assert config["TOKEN"] == "T"
    stopped, _ = started_config(["--max-timeout", "601"], ok=True)
    assert stopped.code == 2


def test_exposure_rules():
    bad = SimpleNamespace(ok=False, reason="no seccomp")
    assert exposure_refusal("127.0.0.1", bad, False) is None
    assert exposure_refusal("::1", bad, False) is None
    assert exposure_refusal("localhost", bad, False) is None
    assert "no seccomp" in exposure_refusal("192.168.1.5", bad, False)
    assert exposure_refusal("192.168.1.5", bad, True) is None
    assert exposure_refusal("0.0.0.0", SimpleNamespace(ok=True, reason=""), False) is None
    assert isinstance(sandbox_state().ok, bool)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_server_stops_on_a_signal(tmp_path, sig):
    server = subprocess.Popen(
        [sys.executable, "-m", "app", "--port", "0", "--workers", "0",
         "--data-dir", str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    try:
        for line in server.stdout:
            if "ready in" in line:
                break
        server.send_signal(sig)
        assert server.wait(timeout=20) == 0
        assert f"{sig.name}: closing the compile workers" in server.stdout.read()
    finally:
        server.kill()
