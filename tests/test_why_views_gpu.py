"""The fusion and saved-activation views of CUDA compiles (skipped without CUDA).

Checks, through the session's worker on the GPU: each fusion the scheduler made ends in a Triton
kernel of the compile's kernel list (Inductor's provenance names it), with the user lines of its
nodes; a refusal names PyTorch's reason; a training step's saved values are the CUDA backward
graph's inputs with their sizes, and its recomputed sin is listed."""

from __future__ import annotations

import math

import pytest
import torch

from compiler_core import Options

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

FUSION = """import torch


def f(x, y):
    h = x.sin()
    s = h.sum(dim=1, keepdim=True)
    a = y.cos()
    b = a.sum(0)
    return h / s, a, b


x, y = torch.randn(64, 256, device="cuda"), torch.randn(64, 256, device="cuda")
torch.compile(f)(x, y)
"""
TRAINING = """import torch

w = torch.nn.Parameter(torch.randn(64, 64, device="cuda"))


def step(x):
    y = x @ w
    return y.sin().cos().sum()


torch.compile(step)(torch.randn(32, 64, device="cuda")).backward()
"""
STAGES_ONLY = Options(device="cuda", measure=False, views=False)


def line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.split("\n"), 1) if text in line)


def test_cuda_fusions_end_in_triton_kernels_with_their_lines(worker):
    result = worker.run(FUSION, STAGES_ONLY, user_file="fusion_gpu.py")
    assert result["error"] is None, result["error"]
    compiled = result["compiles"][0]
    triton = {k["name"] for k in compiled["kernels"] if k["kind"] == "triton"}
    decisions = compiled["fusion"]["decisions"]
    fused = [d for d in decisions if d["fused"]]
    assert fused and all(d["kernel"] in triton for d in fused), decisions
    assert any(line_of(FUSION, "h.sum(") in d["lines"] for d in fused), decisions
    assert all(d["reason"] for d in decisions if not d["fused"])
    assert "fusion" not in result["stderr"]


def test_the_fusion_lessons_mlp_block_has_its_decisions_on_cuda(worker):
    """The gallery's MLP block on CUDA (seen on the H200, torch 2.11, default mode): the
    LayerNorm's Welford reductions and normalisation fuse into one Triton kernel, the residual
    add is refused ("intermediate nodes between node1 & node2"), and no decision names the GELU
    kernel: the matmuls are extern calls, which the scheduler never pairs."""
    from compiler_core.gallery import get_example
    source = get_example("mlp_fusion").source
    result = worker.run(source, STAGES_ONLY, user_file="mlp_fusion_gpu.py")
    assert result["error"] is None, result["error"]
    compiled = result["compiles"][0]
    names = [k["name"] for k in compiled["kernels"]]
    (norm,) = [name for name in names if "layer_norm" in name]
    (gelu,) = [name for name in names if "gelu" in name]
    decisions = compiled["fusion"]["decisions"]
    fused = [d for d in decisions if d["fused"]]
    assert fused and {d["kernel"] for d in fused} == {norm}, decisions
    assert {line for d in fused for line in d["lines"]} == {line_of(source, "self.norm(x)")}
    residual = [d for d in decisions if line_of(source, "return x + self.fc2(h)") in d["lines"]]
    assert residual and all(d["reason"] == "intermediate nodes between node1 & node2"
                            for d in residual), decisions
    assert not any(gelu in d["kernels"] for d in decisions)


def test_cuda_training_step_saves_mm_and_recomputes_sin(worker):
    result = worker.run(TRAINING, STAGES_ONLY, user_file="training_gpu.py")
    assert result["error"] is None, result["error"]
    compiled = result["compiles"][0]
    saved, backward = compiled["saved_activations"], compiled["stages"]["aot_backward"]["text"]
    assert "mm" in {v["name"] for v in saved["saved"]}
    for value in saved["saved"]:
        assert f'{value["name"]}: "f32[{", ".join(value["shape"])}]' in backward
        assert value["bytes"] == math.prod(map(int, value["shape"])) * 4
    assert "sin" in {v["name"] for v in saved["recomputed"]}
