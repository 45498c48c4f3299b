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
    """slug -> result, each gallery example run once on CPU through the real engine (with the
    Core ATen / prims views, which a job traces only when asked)."""
    return {ex.slug: worker.run(ex.source, Options(device="cpu", views=True), user_file=ex.path)
            for ex in list_examples()}


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
