"""MLP block: what fuses, and why not

Inductor keeps the matrix multiplies as library calls and fuses the work around them: the LayerNorm's statistics and normalisation become one loop, the GELU another; the scheduler's fusion log says which nodes it fused and why it left the rest apart.
"""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)


class MLPBlock(nn.Module):
    def __init__(self, dim=16, hidden=64):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        # Dynamo stage: one graph of layer_norm -> linear -> gelu -> linear -> add.
        # Kernels stage: the LayerNorm's reductions (mean, variance) and its normalisation
        # are separate scheduler nodes that share data, and the fusion log shows them fused
        # into one kernel.
        h = self.norm(x)
        # Decomposition stage: each linear becomes addmm (matmul plus bias add) on the
        # transposed weight. The matmuls stay extern calls (extern_kernels.addmm / mm), which
        # the scheduler never offers for fusion; GELU's own ops were merged into one node
        # before the scheduler ran, so it gets a kernel of its own between the matmuls.
        h = F.gelu(self.fc1(h))
        # The residual add reads x as the LayerNorm does, but the matmuls lie between them:
        # the fusion log refuses "intermediate nodes between node1 & node2".
        return x + self.fc2(h)


model = MLPBlock()
compiled = torch.compile(model)
# The parameters require grad, so the AOT stage also shows the backward graph that
# would run on loss.backward(); here we only run forward.
out = compiled(torch.randn(8, 16))
print("output shape:", tuple(out.shape))
