"""MLP with fused pointwise ops

Inductor keeps the matrix multiplies as library calls and fuses the pointwise work around them (bias add, GELU, residual add) into a few generated kernels.
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
        # Decomposition stage: each linear becomes addmm (matmul plus bias add) on the
        # transposed weight.
        h = F.gelu(self.fc1(x))
        # Kernels stage: the matmuls stay extern calls (extern_kernels.addmm / mm) and
        # the pointwise ops become generated kernels named after what they fuse. On CPU,
        # addmm adds both biases itself, leaving cpp_fused_gelu_0 and cpp_fused_add_1;
        # on GPU the second bias add leaves the matmul (mm) to fuse with the residual
        # add in triton_poi_fused_add_addmm_1.
        return x + self.fc2(h)


model = MLP()
compiled = torch.compile(model)
# The parameters require grad, so the AOT stage also shows the backward graph that
# would run on loss.backward(); here we only run forward.
out = compiled(torch.randn(8, 16))
print("output shape:", tuple(out.shape))
