"""MLP with fused pointwise ops

Inductor keeps the matrix multiplies as library calls but fuses the bias add, GELU and residual add around them into a few generated kernels.
"""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)


class MLP(nn.Module):
    def __init__(self, dim=16, hidden=64):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        # Dynamo stage: one graph of linear -> gelu -> linear -> add.
        # Decomposition stage: each linear becomes a matmul (mm/addmm) plus a bias add.
        h = F.gelu(self.fc1(x))
        # Kernels stage: the matmuls stay extern calls (extern_kernels.mm / addmm), while
        # the pointwise work (bias add + GELU, bias add + residual add) is fused into
        # generated kernels named after what they fuse (e.g. cpp_fused_gelu_* on CPU,
        # triton_poi_fused_* on GPU).
        return x + self.fc2(h)


model = MLP()
compiled = torch.compile(model)
# The parameters require grad, so the AOT stage also shows the backward graph that
# would run on loss.backward(); here we only run forward.
out = compiled(torch.randn(8, 16))
print("output shape:", tuple(out.shape))
