"""Scale-out on a real Redis (no mocks): two web servers and two worker hosts as processes.

A `redis-server` on a free port (append-only file, so a restart keeps its data), two
`python -m compiler_core worker --broker URL` hosts of one slot each, and two
`python -m app --broker URL --workers 0` web servers. Jobs submitted on one web server run on a
worker host, stream live to the other web server, and their results are in the shared store; a
worker host SIGKILLed mid-job has its job retried on the other; while Redis restarts, the web
servers answer from what they have seen and 503 new submits, and recover by themselves.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REDIS = shutil.which("redis-server") or "/usr/bin/redis-server"
PASSWORD = "s3cret-broker-pw"
QUICK = {"measure": False, "device": "cpu"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def script(tag: str, sleep_s: float = 0.0) -> str:
    """A tiny distinct script; `sleep_s` keeps it running after its compile (to interrupt)."""
    return (f"import time, torch\n@torch.compile\ndef f_{tag}(x):\n    return torch.sin(x) + 1\n"
            f"f_{tag}(torch.ones(4))\ntime.sleep({sleep_s})\n")


def call(port: int, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     data=json.dumps(body).encode() if body else None,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def wait_for(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def finished(port: int, job: str, timeout: float = 90) -> dict:
    def done():
        status, answer = call(port, "GET", f"/api/jobs/{job}")
        return answer if status == 200 and answer["status"] in ("done", "failed") else None
    return wait_for(done, timeout, f"job {job} on :{port}")


class Redis:
    def __init__(self, folder: str) -> None:
        self.port, self.folder, self.proc = free_port(), folder, None
        self.url = f"redis://:{PASSWORD}@127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [REDIS, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.folder,
             "--appendonly", "yes", "--save", "", "--requirepass", PASSWORD,
             "--maxmemory", "256mb", "--maxmemory-policy", "noeviction"],  # README, Scale out
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: self._answers(), 10, "redis-server")

    def _answers(self) -> bool:
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", self.port)) == 0

    def stop(self) -> None:
        self.proc.terminate()  # a clean shutdown: the append-only file is complete
        self.proc.wait(10)


def spawn(args: list[str], log: str, broker: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": ROOT, "TORCHBOLT_BROKER": broker}
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env,
                            stdout=open(log, "w"), stderr=subprocess.STDOUT,
                            start_new_session=True)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("scaleout"))
    redis = Redis(folder)
    redis.start()
    procs = {f"worker{i}": spawn(["-m", "compiler_core", "worker", "--device", "cpu"],
                                 f"{folder}/worker{i}.log", redis.url) for i in (0, 1)}
    webs = [free_port(), free_port()]
    for port in webs:
        procs[f"web{port}"] = spawn(["-m", "app", "--port", str(port), "--workers", "0"],
                                    f"{folder}/web{port}.log", redis.url)
    try:
        wait_for(lambda: all(call_ok(p) for p in webs), 60, "both web servers")
        wait_for(lambda: workers(webs[0]) == 2, 240, "both worker hosts to advertise")
        yield {"redis": redis, "webs": webs, "procs": procs, "folder": folder}
    finally:
        for proc in procs.values():
            with _quiet():
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        redis.proc.kill()
        redis.proc.wait()


class _quiet:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return exc[0] is ProcessLookupError


def call_ok(port: int) -> bool:
    try:
        return call(port, "GET", "/api/status")[0] == 200
    except OSError:
        return False


def workers(port: int) -> int:
    return sum(env["workers"] for env in call(port, "GET", "/api/status")[1]["environments"])


def events(port: int, job: str) -> list[dict]:
    """Every SSE event of a job, read to its `done`."""
    url = f"http://127.0.0.1:{port}/api/jobs/{job}/events"
    out = []
    with urllib.request.urlopen(url, timeout=90) as stream:
        for raw in stream:
            line = raw.decode().strip()
            if line.startswith("data: "):
                out.append(json.loads(line[6:]))
                if out[-1]["type"] == "done":
                    return out
    return out


def test_status_lists_the_workers_environment_and_submits_may_choose_it(cluster):
    web = cluster["webs"][0]
    status, answer = call(web, "GET", "/api/status")
    assert answer["broker"] == {"url": cluster["redis"].url.replace(PASSWORD, "***"),
                                "reachable": True}
    [env] = answer["environments"]
    assert env["workers"] == 2 and env["device"] == "cpu" and env["torch"].startswith("2.")
    status, answer = call(web, "POST", "/api/compile", {"source": script("env"),
                                                        "options": QUICK, "environment": "nope"})
    assert status == 400 and "unknown environment" in answer["error"]
    status, answer = call(web, "POST", "/api/compile", {"source": script("env"),
                                                        "options": QUICK,
                                                        "environment": env["id"]})
    assert status == 202
    result = finished(web, answer["handle"])["result"]
    assert result["error"] is None
    assert {k: result["environment"][k] for k in ("torch", "triton", "device", "device_name")} \
        == {k: env[k] for k in ("torch", "triton", "device", "device_name")}


def test_jobs_stream_live_to_the_other_web_server_and_results_are_shared(cluster):
    one, two = cluster["webs"]
    jobs = [call(one, "POST", "/api/compile", {"source": script(f"live{i}"), "options": QUICK})[1]
            for i in range(2)]
    streamed = events(two, jobs[0]["handle"])  # the job id works on the other web server too
    kinds = [e["type"] for e in streamed]
    assert kinds[-1] == "done" and "stage" in kinds
    assert {"type": "status", "status": "running"} in streamed
    assert any(e["type"] == "stage" and e["stage"] == "dynamo_graph" for e in streamed)
    for job in jobs:
        assert finished(one, job["handle"])["status"] == "done"
        for web in (one, two):
            status, stored = call(web, "GET", f"/api/results/{job['key']}")
            assert status == 200 and stored["result"]["compiles"][0]["stages"]["dynamo_graph"]
    status, again = call(two, "POST", "/api/compile", {"source": script("live0"),
                                                       "options": QUICK})
    assert status == 202 and again["cached"] and again["key"] == jobs[0]["key"]


def slot_running(redis_cli, job: str) -> str | None:
    """The slot whose heartbeat says it runs this job id's run."""
    run = json.loads(redis_cli.get(f"torchbolt:handle:{job}"))["run"]
    for key in redis_cli.scan_iter(match="torchbolt:slot:*"):
        if json.loads(redis_cli.get(key) or "{}").get("busy") == run:
            return key.decode().split(":", 2)[2]
    return None


def test_a_worker_killed_mid_job_has_its_job_retried_on_the_other(cluster):
    import redis as redis_client
    cli = redis_client.Redis.from_url(cluster["redis"].url)
    web = cluster["webs"][0]
    status, job = call(web, "POST", "/api/compile", {"source": script("kill", sleep_s=6),
                                                     "options": QUICK})
    slot = wait_for(lambda: slot_running(cli, job["handle"]), 60, "a slot to take the job")
    host_pid = int(slot.rsplit("-", 2)[1])  # slots are named HOST-PID-INDEX
    victim = next(p for p in cluster["procs"].values() if p.pid == host_pid)
    killed = time.monotonic()
    os.kill(victim.pid, signal.SIGKILL)
    answer = finished(web, job["handle"], timeout=60)
    assert time.monotonic() - killed < 60
    assert answer["status"] == "done", answer
    assert answer["result"]["compiles"] and not answer["result"].get("partial")
    # The server that followed the run live told its retry; the other reads the finished run's
    # stream, which holds only its result by then (protocol.end_stream), and answers the same.
    streamed = events(web, job["handle"])
    assert any("stopped answering" in (e.get("message") or "") for e in streamed), \
        [e for e in streamed if e["type"] != "stage"]
    assert finished(cluster["webs"][1], job["handle"])["result"] == answer["result"]


def test_redis_restart_503s_submits_serves_what_was_seen_and_recovers(cluster):
    one, two = cluster["webs"]
    redis = cluster["redis"]
    status, seen = call(one, "POST", "/api/compile", {"source": script("seen"), "options": QUICK})
    assert finished(one, seen["handle"])["status"] == "done"
    assert call(one, "GET", f"/api/results/{seen['key']}")[0] == 200
    status, running = call(two, "POST", "/api/compile", {"source": script("through", 3),
                                                         "options": QUICK})
    wait_for(lambda: call(two, "GET", f"/api/jobs/{running['handle']}")[1]["status"] == "running",
             60, "the job to start")
    redis.stop()
    try:
        status, answer = call(one, "POST", "/api/compile", {"source": script("down"),
                                                            "options": QUICK})
        assert status == 503 and answer["ok"] is False and answer["status"] == 503
        assert "cannot be reached" in answer["error"] and PASSWORD not in answer["error"]
        status, stored = call(one, "GET", f"/api/results/{seen['key']}")
        assert status == 200 and stored["result"]["error"] is None
        assert call(one, "GET", "/api/status")[1]["broker"]["reachable"] is False
        time.sleep(2)
    finally:
        redis.start()
    assert finished(two, running["handle"], timeout=90)["status"] == "done"
    status, after = wait_for(
        lambda: (lambda s, a: (s, a) if s == 202 else None)(
            *call(one, "POST", "/api/compile", {"source": script("after"), "options": QUICK})),
        30, "submits to be accepted again")
    assert finished(one, after["handle"])["status"] == "done"
    logs = "".join(open(os.path.join(cluster["folder"], name)).read()
                   for name in os.listdir(cluster["folder"]) if name.endswith(".log"))
    assert PASSWORD not in logs
