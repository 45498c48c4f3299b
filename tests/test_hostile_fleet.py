"""What a client costs the fleet (the Redis broker) is bounded by what it is allowed (issue 45,
items 7 and 9 on the fleet).

- admission: the fleet's queue counts clients per /24 (IPv4) or /64 (IPv6) as the embedded
  queue does (`compiler_core.fairness.admission_refusal`), so many loopback addresses of one
  network cannot fill it, and it holds at most `max_queued` runs per environment;
- the shared results store in Redis is bounded (`fleet_store_bytes`): the least recently used
  results go first, never one used within the hour a job handle lives; when every result is
  that recent, a new one is refused with a typed `StoreFull` and its job still answers.

A real `redis-server` (the module's own, tests/conftest.py) and a real waitress web server on the
broker, in this process. Its environment is one fake slot's heartbeat: the one run sent on to
RQ is never taken, so every other run waits in the fair queue and nothing runs.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import threading
import time
import uuid

import pytest
from test_hostile_http_cost import assert_refusal, rss_mb

from compiler_core import BrokerDown
from compiler_core.cluster import protocol

ENV = "hostile-env"
MB = 1 << 20


@pytest.fixture(scope="module")
def fleet_web(redis_server, tmp_path_factory):
    """(web server port, Redis client, its app) with a fake slot advertising `ENV`."""
    import redis as redis_client

    from app import create_app
    from app.serving import make_server
    conn = redis_client.Redis.from_url(redis_server.url)
    conn.set(protocol.slot_key("hostile-fake"), json.dumps({
        "env_id": ENV, "torch": "fake", "triton": None, "device": "cpu", "device_name": "cpu",
        "busy": None}), ex=3600)
    app = create_app({"BROKER": redis_server.url, "WORKERS": 0, "WARM_FIRST_LESSON": False,
                      "DATA_DIR": str(tmp_path_factory.mktemp("web"))})
    server = make_server(app, "127.0.0.1", 0, threads=16)
    threading.Thread(target=server.run, daemon=True).start()
    try:
        yield server.effective_port, conn, app
    finally:
        app.extensions["torchbolt.runs"].close()
        server.close()
        conn.delete(protocol.slot_key("hostile-fake"))


def submit(port: int, address: str, tag: str) -> tuple[int, dict, float]:
    """(status, answer, seconds) of a submit of a distinct sleeping script from `address`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(address, 0))
    body = {"source": f"import time\ntime.sleep(60)  # {tag} {uuid.uuid4().hex}\n",
            "options": {"measure": False, "timeout": 90}}
    started = time.perf_counter()
    try:
        conn.request("POST", "/api/compile", body=json.dumps(body),
                     headers={"Content-Type": "application/json"})
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read()), time.perf_counter() - started
    finally:
        conn.close()


def cancel_all(port: int, jobs: list[tuple[str, str]]) -> None:
    for address, job in reversed(jobs):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30,
                                          source_address=(address, 0))
        conn.request("POST", f"/api/jobs/{job}/cancel")
        conn.getresponse().read()
        conn.close()


def waiting(conn) -> int:
    return conn.zcard(protocol.fair_key(ENV, "waiting"))


def flood(port: int, addresses: list[str], per_address: int, jobs: list, statuses: list,
          refusals: dict) -> None:
    """Each address submits `per_address` jobs in turn; accepted ones go to `jobs`, the first
    answer of each refused status to `refusals`."""
    for address in addresses:
        for j in range(per_address):
            status, answer, _ = submit(port, address, f"{address} {j}")
            statuses.append(status)
            if status == 202:
                jobs.append((address, answer["handle"]))
            else:
                refusals.setdefault(status, answer)


def test_many_addresses_of_one_network_leave_room_in_the_fleet_queue(fleet_web):
    """33 loopback addresses x 2 sleeping jobs on the fleet: the network's second jobs are a
    429 past `queued_per_network` (before: all 66 queued, the queue had no bound), and a new
    client, of another network or of the same one, still queues its first job."""
    port, conn, _ = fleet_web
    jobs, statuses, refusals = [], [], {}
    memory = conn.info("memory")["used_memory"]
    try:
        status, answer, benign_s = submit(port, "127.0.2.1", "benign")
        assert status == 202, answer
        jobs.append(("127.0.2.1", answer["handle"]))
        rss = rss_mb()
        flood(port, [f"127.0.0.{100 + i}" for i in range(33)], 2, jobs, statuses, refusals)
        queued, grown = waiting(conn), conn.info("memory")["used_memory"] - memory
        refused_address = f"127.0.0.{100 + statuses.index(429) // 2}"
        leases = conn.zcard(protocol.lease_key(refused_address))
        new = submit(port, "127.0.1.50", "a new client")
        same_network = submit(port, "127.0.0.99", "a new address of the same /24")
        for address, (status, answer, _) in (("127.0.1.50", new), ("127.0.0.99", same_network)):
            if status == 202:
                jobs.append((address, answer["handle"]))
    finally:
        cancel_all(port, jobs)
    print(f"fleet, 33 addresses x 2 sleeping jobs: {statuses.count(202)} accepted ({queued} "
          f"waiting, Redis +{grown / MB:.1f} MB, server RSS +{rss_mb() - rss:.0f} MB), refused "
          f"{sorted(set(statuses) - {202})}; a new client {new[0]} in {new[2] * 1000:.0f} ms "
          f"(a benign submit before: {benign_s * 1000:.0f} ms), a new address of the same /24 "
          f"{same_network[0]}")
    assert new[0] == 202 and same_network[0] == 202, (new[:2], same_network[:2])
    assert set(statuses) <= {202, 429} and queued <= 48, (statuses, queued)
    refusal = statuses.index(429)
    assert refusal % 2 == 1  # a second job of an address, never a first
    assert_refusal(429, refusals[429], 429, "queued_per_network", "127.0.0.0/24")
    assert leases == 1  # the refused submit holds no place of the client's per-client limit
    assert waiting(conn) == 0  # the cancels emptied it


def test_the_fleet_queue_holds_at_most_max_queued_runs(fleet_web):
    """80 clients of 80 networks, one job each: 64 wait and the rest are a 503 naming the full
    queue (before: all 80 waited, and any number more would)."""
    port, conn, app = fleet_web
    jobs, statuses, refusals = [], [], {}
    try:
        flood(port, [f"127.1.{i}.1" for i in range(80)], 1, jobs, statuses, refusals)
        queued = waiting(conn)
    finally:
        cancel_all(port, jobs)
    max_queued = app.extensions["torchbolt.runs"].max_queued
    print(f"fleet, 80 networks x 1 job: {statuses.count(202)} accepted ({queued} waiting, "
          f"max_queued {max_queued}), refused {sorted(set(statuses) - {202})}")
    assert queued <= max_queued and set(statuses) == {202, 503}, (queued, set(statuses))
    assert_refusal(503, refusals[503], 503, "queue is full")


# -- the shared results store

@pytest.fixture
def store_broker(redis_server, monkeypatch):
    """A `Broker` on database 2 of the server (emptied), its store bounded at 8 MiB."""
    from compiler_core import Broker
    monkeypatch.setenv("TORCHBOLT_LIMIT_FLEET_STORE_BYTES", str(8 * MB))
    broker = Broker(redis_server.url.rsplit("/", 1)[0] + "/2")
    broker.conn.flushdb()
    yield broker
    broker.conn.flushdb()


def blob(i: int) -> bytes:
    """A compressed result of 1 MiB that no one could compress further."""
    return os.urandom(MB - 64) + f"{i:064d}".encode()


def test_the_fleet_store_is_bounded_least_recently_used_first(store_broker, monkeypatch):
    """A client's 32 distinct results of 1 MiB each grew Redis by 32 MB, without end (before:
    no bound, results never expired). Bounded at 8 MiB: the least recently used results go
    first, and one read meanwhile stays."""
    monkeypatch.setattr("compiler_core.cluster.store.IN_USE_S", 0.0, raising=False)  # no
    # result is in use: every one may go
    conn = store_broker.conn
    memory = conn.info("memory")["used_memory"]
    keys = [f"{i:020x}" for i in range(32)]
    for i, key in enumerate(keys):
        store_broker.save_result(key, "pass\n", {"tag": i}, blob(i))
        if i >= 2:
            assert store_broker.load_result(keys[0]) is not None, i  # read: recently used
    grown = conn.info("memory")["used_memory"] - memory
    kept = [key for key in keys if store_broker.load_result(key) is not None]
    counted = int(conn.hget("torchbolt:results:bytes", "*"))
    print(f"32 results of 1 MiB: Redis +{grown / MB:.1f} MB, {len(kept)} kept "
          f"({counted / MB:.1f} MB counted)")
    assert counted <= 8 * MB and grown < 12 * MB, (counted, grown)  # Redis's own overhead
    assert keys[0] in kept and keys[1] not in kept and keys[-1] in kept, kept
    assert kept == [keys[0], *keys[-len(kept) + 1:]]  # the most recent ones, and the one read


def test_a_result_in_use_is_never_evicted_and_a_new_one_is_refused_typed(store_broker):
    """Every stored result was used within the hour a job handle lives (a handle holds only
    its key): none is evicted, and a new result past the bound is a typed `StoreFull` naming
    the limit."""
    keys = [f"{i:020x}" for i in range(9)]
    refused = None
    for i, key in enumerate(keys):
        try:
            store_broker.save_result(key, "pass\n", {"tag": i}, blob(i))
        except BrokerDown as exc:
            refused = refused or (i, type(exc).__name__, str(exc))
    kept = [key for key in keys if store_broker.load_result(key) is not None]
    assert refused and refused[1] == "StoreFull" and "fleet_store_bytes" in refused[2], refused
    assert kept == keys[:refused[0]] and len(kept) >= 7, (kept, refused)


def test_a_job_whose_result_the_full_store_refused_still_answers(fleet_web, monkeypatch):
    """The store full of results in use: a finished run's result is not stored, yet its job
    answers it (from the web server that followed the run), and the result says why it was
    not stored."""
    port, conn, app = fleet_web
    broker = app.extensions["torchbolt.runs"].broker
    monkeypatch.setenv("TORCHBOLT_LIMIT_FLEET_STORE_BYTES", str(4 * MB))
    for i in range(4):
        with contextlib.suppress(BrokerDown):
            broker.save_result(f"{i:020x}", "pass\n", {}, blob(i))
    status, answer, _ = submit(port, "127.0.3.1", "refused by the store")
    assert status == 202, answer
    job = answer["handle"]
    run_id = json.loads(conn.get(protocol.handle_key(job)))["run"]
    key = protocol.run_origin(conn, run_id)["key"]
    stdout = base64.b64encode(os.urandom(2 * MB)).decode()  # ~2 MB compressed: no room left
    protocol.end_run(conn, run_id, key, {"error": None, "stdout": stdout, "truncated": []})
    done = wait_finished(port, "127.0.3.1", job)
    for i in range(4):
        conn.delete(protocol.result_key(f"{i:020x}"))
    assert done["status"] == "done" and done["result"]["stdout"] == stdout, done["status"]
    notes = [t for t in done["result"]["truncated"] if t["limit"] == "fleet_store_bytes"]
    assert notes and "not stored" in notes[0]["message"], done["result"]["truncated"]
    assert broker.load_result(key) is None


def wait_finished(port: int, address: str, job: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30,
                                          source_address=(address, 0))
        conn.request("GET", f"/api/jobs/{job}")
        answer = json.loads(conn.getresponse().read())
        conn.close()
        if answer.get("status") in ("done", "failed"):
            return answer
        time.sleep(0.2)
    raise AssertionError(f"job {job} did not end within {timeout} s")
