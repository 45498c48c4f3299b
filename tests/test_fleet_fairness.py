"""Fair across the fleet, on a real Redis: per-client limits and round-robin held in Redis.

A `redis-server` on a free port, one worker host of one slot (`python -m compiler_core worker`;
both the session's `fleet_host`, tests/conftest.py) and web servers on the broker (real waitress servers in this process, so each pair can have its
own per-client limit). Clients are told apart by their address: each test client connects from
its own loopback address (127.0.0.2, 127.0.0.3, ...), and the web layer trusts no proxy header.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections import Counter

import pytest
from test_scaleout import QUICK, script, wait_for

from app import create_app
from app.manager import MAX_QUEUED, limit_reached
from app.serving import make_server
from compiler_core import FairQueue
from compiler_core.cluster import fairness, leases, protocol

A, B, C, D = "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"


@pytest.fixture
def scratch(fleet_host):
    """A client on database 1 of the fleet's server (the fleet uses 0), emptied for each test."""
    import redis as redis_client
    conn = redis_client.Redis.from_url(fleet_host[0].url.rsplit("/", 1)[0] + "/1")
    conn.flushdb()
    return conn


@pytest.fixture(scope="module")
def worker_host(fleet_host):
    """A client of the fleet's Redis, where one worker host with one slot is advertised
    (`fleet_host`, tests/conftest.py)."""
    return fleet_host[1]


@pytest.fixture(scope="module")
def web_servers(fleet_host, tmp_path_factory):
    """`make(per_client)`: two web servers on the broker with that per-client limit."""
    made = []

    def make(per_client: int) -> list[int]:
        ports = []
        for _ in range(2):
            app = create_app({"BROKER": fleet_host[0].url, "WORKERS": 0,
                              "JOBS_PER_CLIENT": per_client, "WARM_FIRST_LESSON": False,
                              "DATA_DIR": str(tmp_path_factory.mktemp("web"))})
            server = make_server(app, "127.0.0.1", 0, threads=16)
            threading.Thread(target=server.run, daemon=True).start()
            made.append((app, server))
            ports.append(server.effective_port)
        return ports

    yield make
    for app, server in made:
        app.extensions["torchbolt.runs"].close()
        server.close()


def call(port: int, method: str, path: str, client: str, body: dict | None = None,
         headers: dict | None = None) -> tuple[int, dict]:
    """An API call from `client`'s own address."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30,
                                            source_address=(client, 0))
    try:
        connection.request(method, path, body=json.dumps(body) if body else None,
                           headers={"Content-Type": "application/json", **(headers or {})})
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


def submit(port: int, client: str, tag: str, sleep_s: float = 0.0, **headers) -> tuple[int, dict]:
    return call(port, "POST", "/api/compile", client,
                {"source": script(tag, sleep_s), "options": QUICK}, headers)


def status(port: int, client: str, job: str) -> str:
    return call(port, "GET", f"/api/jobs/{job}", client)[1]["status"]


def queued_position(port: int, client: str, job: str) -> int:
    """The position the job's first event (queued) showed."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30,
                                            source_address=(client, 0))
    try:
        connection.request("GET", f"/api/jobs/{job}/events")
        stream = connection.getresponse()
        while not (line := stream.readline().decode()).startswith("data: "):
            pass
        event = json.loads(line[6:])
        assert event["status"] == "queued", event
        return event["position"]
    finally:
        connection.close()


def started_at(conn, job: str) -> str | None:
    """The stream entry id (ms-seq, Redis's clock) of the job's run's `started`, if it has one."""
    run = json.loads(conn.get(protocol.handle_key(job)))["run"]
    for entry_id, fields in conn.xrange(protocol.run_key(run)):
        if protocol.entry_kind(fields) == "started":
            return entry_id.decode()
    return None


def order(entry_id: str) -> tuple[int, int]:
    return tuple(int(part) for part in entry_id.split("-"))


# -- leases and the fair queue on their own (Redis only, no worker)

def test_a_lease_counts_until_released_or_run_out(scratch):
    assert [leases.acquire(scratch, A, f"job{i}", 2) for i in range(3)] == [True, True, False]
    assert leases.acquire(scratch, B, "other", 2)  # per client
    leases.release(scratch, [(A, "job0")])
    assert leases.acquire(scratch, A, "job2", 2)
    assert leases.acquire(scratch, C, "renewed", 2, lease_s=1)
    assert leases.acquire(scratch, C, "lapses", 2, lease_s=1)
    time.sleep(0.6)
    leases.renew(scratch, [(C, "renewed"), (C, "never-held")])  # renewing adds nothing
    time.sleep(0.6)  # "lapses" ran out (its web server died): its place is free again
    assert leases.acquire(scratch, C, "new", 2) and not leases.acquire(scratch, C, "more", 2)
    assert scratch.zscore(protocol.lease_key(C), "never-held") is None


def queue_run(conn, env_id: str, run_id: str, client: str) -> int:
    conn.xadd(protocol.run_key(run_id), protocol.entry("queued", {
        "key": f"key-{run_id}", "source": "pass", "options": {"timeout": 10},
        "env_id": env_id}))
    return fairness.push(conn, env_id, run_id, client, MAX_QUEUED)


def take_from_rq(conn, env_id: str) -> list[str]:
    """The run RQ holds for the slot now, if any (one slot: never more), taken and ended (its
    result published)."""
    from rq import Queue
    queue = Queue(protocol.queue_name(env_id), connection=conn)
    taken = [job_id.rsplit("-", 1)[0] for job_id in queue.job_ids]
    assert len(taken) <= 1, taken
    for run_id in taken:
        queue.remove(f"{run_id}-1")
        protocol.end_run(conn, run_id, f"key-{run_id}", {})
    return taken


def test_runs_go_to_rq_round_robin_one_per_free_slot(scratch):
    env = "env-test"
    scratch.set(protocol.slot_key("fake-slot"), json.dumps({"env_id": env}), ex=60)
    ahead = [queue_run(scratch, env, run, client) for run, client in
             [("a1", A), ("a2", A), ("a3", A), ("a4", A), ("b1", B), ("c1", C), ("d1", D)]]
    assert ahead == [0, 1, 2, 3, 1, 2, 3]  # b1 waits behind a1 only: honest positions
    assert fairness.remove(scratch, env, "d1") and not fairness.remove(scratch, env, "d1")
    scratch.delete(protocol.run_key("c1"))  # its stream expired: skipped, not run
    served = []
    for _ in range(6):
        fairness.dispatch(scratch, env)
        fairness.dispatch(scratch, env)  # the slot is taken: nothing more goes
        served += take_from_rq(scratch, env)
    assert served == ["a1", "b1", "a2", "a3", "a4"]
    assert scratch.zcard(protocol.fair_key(env, "waiting")) == 0


def test_one_rule_orders_the_embedded_queue_and_redis_alike(scratch):
    """The same pushes and takes give the same service order in one web server's FairQueue and
    in Redis (one slot): both follow compiler_core/fairness.py's rounds."""
    env = "env-rule"
    scratch.set(protocol.slot_key("fake-slot"), json.dumps({"env_id": env}), ex=60)
    embedded, counts, local, fleet = FairQueue(), Counter(), [], []
    for step in ["A", "A", "A", "B", "C", "take", "take", "B", "D"] + ["take"] * 5:
        if step == "take":
            local.append(embedded.get())
            fairness.dispatch(scratch, env)
            fleet += take_from_rq(scratch, env)
        else:
            counts[step] += 1
            run = f"{step.lower()}{counts[step]}"
            embedded.put(step, run)
            queue_run(scratch, env, run, step)
    assert local == fleet == ["a1", "b1", "c1", "d1", "a2", "b2", "a3"]


def test_a_sent_run_holds_its_slot_until_its_result(scratch):
    env = "env-test"
    scratch.set(protocol.slot_key("fake-slot"), json.dumps({"env_id": env}), ex=60)
    queue_run(scratch, env, "first", A)
    queue_run(scratch, env, "second", B)
    assert fairness.dispatch(scratch, env) == 1
    scratch.xadd(protocol.run_key("first"), protocol.entry("started", {}))
    assert fairness.dispatch(scratch, env) == 0  # running: the slot is not free
    protocol.end_run(scratch, "first", "key-first", {})  # e.g. the reaper's WorkerDied
    assert fairness.dispatch(scratch, env) == 1
    scratch.delete(protocol.slot_key("fake-slot"))
    queue_run(scratch, env, "third", C)
    protocol.end_run(scratch, "second", "key-second", {})
    assert fairness.dispatch(scratch, env) == 0  # no live slot: it waits


# -- the fleet: two web servers, one worker slot

def test_a_clients_third_job_is_a_429_on_either_web_server(web_servers, worker_host):
    one, two = web_servers(2)
    jobs = [submit(one, A, "limit0", 20)[1]["handle"], submit(two, A, "limit1")[1]["handle"]]
    lease_ends = worker_host.zscore(protocol.lease_key(A), jobs[0])
    refusal = limit_reached(2).message
    for port in (one, two):
        code, answer = submit(port, A, "limit2")
        assert code == 429 and answer["error"] == refusal, answer
    code, _ = submit(one, A, "limit2", **{"X-Forwarded-For": B})  # a proxy header is not trusted
    assert code == 429
    code, other = submit(two, B, "limit3")
    assert code == 202  # another client has its own two
    wait_for(lambda: worker_host.zscore(protocol.lease_key(A), jobs[0]) > lease_ends, 10,
             "the web server to renew the live job's lease")
    assert call(two, "POST", f"/api/jobs/{jobs[1]}/cancel", A)[1]["status"] == "failed"
    code, third = submit(one, A, "limit2")  # the cancel (on the other server) freed a place
    assert code == 202
    for port, client, job in [(one, A, jobs[0]), (one, A, third["handle"]), (two, B, other["handle"])]:
        call(port, "POST", f"/api/jobs/{job}/cancel", client)
    wait_for(lambda: status(one, A, jobs[0]) == "failed", 10, "the running job to be cancelled")
    wait_for(lambda: not worker_host.zcard(protocol.lease_key(A)), 10, "A's leases to go")


def test_a_burst_waits_behind_other_clients_single_jobs(web_servers, worker_host):
    one, two = web_servers(4)
    wait_for(lambda: all(not json.loads(worker_host.get(key) or "{}").get("busy")
                         for key in worker_host.scan_iter(match=protocol.slot_key("*"))),
             30, "the slot to be idle")
    a1 = submit(one, A, "burst1")[1]["handle"]
    wait_for(lambda: status(one, A, a1) == "running", 30, "A's first job to start")
    burst = [submit(one, A, f"burst{i}")[1]["handle"] for i in (2, 3, 4)]
    b, c = submit(two, B, "single-b")[1]["handle"], submit(one, C, "single-c")[1]["handle"]
    assert [queued_position(one, A, job) for job in burst] == [1, 2, 3]
    assert [queued_position(two, B, b), queued_position(one, C, c)] == [1, 2]
    wait_for(lambda: started_at(worker_host, burst[0]), 60, "A's second job to start")
    assert started_at(worker_host, b) and started_at(worker_host, c)
    assert order(started_at(worker_host, b)) < order(started_at(worker_host, burst[0]))
    assert order(started_at(worker_host, c)) < order(started_at(worker_host, burst[0]))
    for job in burst[1:]:  # still waiting: cancelled there at once
        assert call(two, "POST", f"/api/jobs/{job}/cancel", A)[1]["status"] == "failed"
    for job in burst[1:]:
        wait_for(lambda: status(one, A, job) == "failed", 10, "the cancelled job to end")
        assert started_at(worker_host, job) is None
    assert call(one, "GET", f"/api/jobs/{burst[0]}", A)[1]["status"] in ("running", "done")
