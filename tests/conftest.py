"""Shared fixtures: ONE warm worker per test session, each gallery example compiled once, one
build cache for the CLI's runs and one Redis with a worker host for the fleet's jobs."""

from __future__ import annotations

import os
import signal
import uuid
from unittest import mock

import pytest

# A secret in the server's environment that no job may ever see (tests/test_sandbox.py).
os.environ["TORCHBOLT_TEST_CANARY"] = f"canary-{uuid.uuid4().hex}"

from compiler_core import Options, Worker, list_examples  # noqa: E402


@pytest.fixture(scope="session")
def worker():
    worker = Worker().start()
    worker.wait_ready()
    yield worker
    worker.close()


@pytest.fixture(scope="session")
def cli_cache_home(tmp_path_factory):
    """The XDG_CACHE_HOME of the CLI runs that assert no fresh build (tests/test_cli.py,
    test_trust_boundary.py, test_hostile_surfaces.py), as one user's cache is: the first run's
    zygote builds the kept precompiled header (a warm-up compile), later runs reuse it instead
    of each building its own; each script still has its own kernels folder (by its source)."""
    return tmp_path_factory.mktemp("cli-cache")


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    """A real `redis-server` of the module's own (nothing else advertised on it)."""
    from test_scaleout import Redis
    redis = Redis(str(tmp_path_factory.mktemp("redis")))
    redis.start()
    yield redis
    redis.proc.kill()
    redis.proc.wait()


@pytest.fixture(scope="session")
def fleet_host(tmp_path_factory):
    """(a real `redis-server`, a client of it) with one worker host of one slot advertised there
    (`python -m compiler_core worker`), shared by the fleet tests that run jobs
    (tests/test_fleet_fairness.py, test_hostile_surfaces.py): each host pays torch's import and a
    warm-up compile. Its runs' records are capped at 16 MiB on the stream (the cap's test)."""
    import redis as redis_client
    from test_scaleout import Redis, spawn, wait_for

    from compiler_core.cluster import protocol
    redis = Redis(str(tmp_path_factory.mktemp("fleet-host")))
    redis.start()
    with mock.patch.dict(os.environ, {"TORCHBOLT_LIMIT_STREAM_BYTES_PER_RUN": str(16 << 20)}):
        proc = spawn(["-m", "compiler_core", "worker", "--device", "cpu"],
                     os.path.join(redis.folder, "worker.log"), redis.url)
    conn = redis_client.Redis.from_url(redis.url)
    try:
        wait_for(lambda: list(conn.scan_iter(match=protocol.slot_key("*"))), 240,
                 "the worker slot to advertise itself")
        yield redis, conn
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        redis.proc.kill()
        redis.proc.wait()


@pytest.fixture(scope="session")
def cpu_runs(worker):
    """run(source, user_file) -> (the job's result, its script's path in the job, its records as
    the job kept them): each source run once per script name (the job keeps only the base name)
    on CPU through the real engine, with the default options (timings, and the Core ATen / prims
    views, which a job traces only when asked). Shared by `gallery_results` and `kept_runs`, so
    a gallery example runs once for both."""
    from compiler_core.supervisor.job import Job
    runs: dict[tuple[str, str], tuple[dict, str, list]] = {}

    def run(source: str, user_file: str) -> tuple[dict, str, list]:
        key = source, os.path.basename(user_file)
        if key not in runs:
            records: list = []
            job = Job(source, Options(device="cpu", views=True), user_file,
                      mirror=lambda step, data: records.append(data) if step == "record" else None)
            worker.execute(job)
            runs[key] = job.result, job.user_file, records
        return runs[key]
    return run


@pytest.fixture(scope="session")
def gallery_results(cpu_runs):
    """slug -> result, each gallery example run once (`cpu_runs`)."""
    return {ex.slug: cpu_runs(ex.source, ex.path)[0] for ex in list_examples()}


@pytest.fixture(scope="session")
def kept_runs(cpu_runs):
    """run(source, name) -> (a job's result, its result rebuilt from its records with its
    profiles taken as not withheld: the kernel attribution's join, which a busy machine would
    withhold; tests/test_attribution*.py), each run once (`cpu_runs`: a gallery example's run
    is `gallery_results`' when `name` is its file's)."""
    from compiler_core.report.result import build_result
    from compiler_core.wire import unpacked
    rebuilt: dict[tuple[str, str], dict] = {}

    def run(source: str, name: str) -> tuple[dict, dict]:
        result, user_file, records = cpu_runs(source, name)
        if (source, name) not in rebuilt:
            kept = [unpacked(r) for r in records]
            for record in (r for r in kept if r["name"] == "timing"):
                for side in record["meta"].get("kernels", {}).get("totals", {}).values():
                    side.pop("withheld", None)
            rebuilt[source, name] = build_result(kept, user_file)
        return result, rebuilt[source, name]
    return run


TINY_ENCODER = """import torch
import torch.nn as nn

layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, batch_first=True)
encoder = torch.compile(nn.TransformerEncoder(layer, num_layers=2))
out = encoder(torch.randn(2, 4, 16))
out.sum().backward()
"""


@pytest.fixture(scope="session")
def encoder_result(worker):
    """A compiled nn.TransformerEncoder from torch itself (2 layers, d_model 16, fw+bw): a frame
    in library code, with Dynamo's long names of lifted parameters; stages only."""
    return worker.run(TINY_ENCODER, Options(device="cpu", measure=False, views=False),
                      user_file="encoder.py")
