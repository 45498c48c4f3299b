"""Softmax and LayerNorm reductions

Softmax and LayerNorm decompose into reductions (max, sum, mean, variance) followed by pointwise math, which Inductor turns into reduction kernels.
"""
import torch
from torch.nn import functional as F

torch.manual_seed(0)


def f(x, weight, bias):
    # Decomposition stage: softmax becomes amax, sub, exp, sum and div along the last dim.
    probs = torch.softmax(x, dim=-1)
    # layer_norm becomes var_mean (a reduction), then rsqrt, sub, mul and the affine
    # weight/bias (pointwise).
    # Kernels stage: each reduction is a loop over the last dim with the pointwise math
    # fused into it (on GPU: triton_per_* / triton_red_* reduction kernels).
    return F.layer_norm(probs, (16,), weight, bias)


x = torch.randn(8, 16)
weight = torch.randn(16)
bias = torch.randn(16)
compiled = torch.compile(f)
out = compiled(x, weight, bias)
print("output shape:", tuple(out.shape))
