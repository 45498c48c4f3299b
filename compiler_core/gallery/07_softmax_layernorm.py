"""Softmax and LayerNorm reductions

Softmax and LayerNorm decompose into row reductions (max, sum, mean, variance) and pointwise math, which Inductor fuses here into a single reduction kernel.
"""
import torch
from torch.nn import functional as F

torch.manual_seed(0)


def f(x, weight, bias):
    # Decomposition stage: softmax becomes amax, sub, exp, sum and div along the last dim.
    probs = torch.softmax(x, dim=-1)
    # layer_norm becomes var_mean (a reduction), then rsqrt, sub, mul and the affine
    # weight/bias (pointwise).
    # Kernels stage: both reductions and all the pointwise math fuse into one kernel
    # that handles a row at a time (cpp_fused__softmax_native_layer_norm_0 on CPU; a
    # triton_per_fused__softmax_..._native_layer_norm_... kernel on GPU).
    return F.layer_norm(probs, (16,), weight, bias)


x = torch.randn(8, 16)
weight = torch.randn(16)
bias = torch.randn(16)
compiled = torch.compile(f)
out = compiled(x, weight, bias)
print("output shape:", tuple(out.shape))
