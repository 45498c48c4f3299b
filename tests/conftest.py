"""Shared fixtures: ONE warm worker per test session, and each gallery example compiled once."""

from __future__ import annotations

import os
import uuid

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
def gallery_results(worker):
    """slug -> result, each gallery example run once on CPU through the real engine."""
    return {ex.slug: worker.run(ex.source, Options(device="cpu"), user_file=ex.path)
            for ex in list_examples()}
