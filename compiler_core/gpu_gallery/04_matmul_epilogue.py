"""Matmul with a fused epilogue

A bf16 linear layer followed by bias and GELU: Inductor calls the library matmul (cuBLAS) and fuses the bias and GELU into one Triton kernel; with mode="max-autotune" it also benchmarks Triton matmul templates with the epilogue inside.
"""
import torch
from torch.nn import functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"
m, k, n = (8192, 4096, 4096) if device == "cuda" else (64, 128, 128)
dtype = torch.bfloat16


def linear_gelu(x, weight, bias):
    return F.gelu(x @ weight + bias)


x = torch.randn(m, k, device=device, dtype=dtype)
weight = torch.randn(k, n, device=device, dtype=dtype) / k**0.5
bias = torch.randn(n, device=device, dtype=dtype)
out = torch.compile(linear_gelu)(x, weight, bias)
print("mean:", float(out.float().mean()))
