"""The correctness gate's pieces: fresh inputs of the recorded layout, a tolerance per dtype,
and the judgement against float64 as PyTorch's benchmark runner makes it."""

from __future__ import annotations

import pytest
import torch

from compiler_core.runtime.measure.accuracy import compare, verdict
from compiler_core.runtime.measure.inputs import fresh_like


def test_fresh_inputs_are_random_with_the_same_layout():
    base = torch.randn(6, 4).t()
    fresh = fresh_like(base)
    assert fresh.shape == base.shape and fresh.stride() == base.stride()
    assert not torch.equal(fresh, base) and bool(fresh.ne(0).all())
    ids = fresh_like(torch.tensor([3, 7, 5]))
    assert ids.dtype == torch.int64 and int(ids.min()) >= 3 and int(ids.max()) <= 7
    leaf = fresh_like(torch.ones(3, requires_grad=True))
    assert leaf.requires_grad and leaf.is_leaf
    assert fresh_like(torch.zeros(2, dtype=torch.bool)).dtype == torch.bool


def test_tolerance_depends_on_dtype():
    x = torch.randn(1000)
    assert compare(x, x + 1e-6)["ok"] is True
    assert compare(x, x + 1e-2)["ok"] is False
    bf16 = x.bfloat16()
    assert compare(bf16, bf16 + 1e-2)["ok"] is True
    assert compare(x, x[:10])["ok"] is False
    assert compare(x, x.double())["ok"] is False  # dtype changed


def test_correctness_is_judged_against_float64_as_the_benchmark_runner_does():
    torch.manual_seed(0)
    exact = torch.randn(4096, dtype=torch.float64)
    eager = (exact + 1e-3 * torch.randn(4096, dtype=torch.float64)).float()
    reordered = (exact + 1e-3 * torch.randn(4096, dtype=torch.float64)).float()
    assert compare(eager, reordered)["ok"] is False  # a fixed tolerance calls it a mismatch
    judged = verdict(eager, reordered, exact)
    assert judged["ok"] is True and judged["reference"] == "float64"
    assert judged["rmse_vs_float64"]["compiled"] == pytest.approx(1e-3, rel=0.2)
    wrong = verdict(eager, eager + 0.05, exact)
    assert wrong["ok"] is False and wrong["max_abs"] == pytest.approx(0.05, rel=1e-3)
    assert verdict(eager, reordered, None)["reference"] == "eager"
