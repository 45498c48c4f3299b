"""Small transformer block

A pre-norm transformer block (causal self-attention plus MLP) compiles into one graph whose kernels fuse the softmax, masking, LayerNorm and GELU around the matrix multiplies.
"""
import math

import torch
from torch import nn

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, dim=32, heads=4, seq_len=8):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        # True above the diagonal: positions a token may not attend to.
        self.register_buffer("mask", torch.ones(seq_len, seq_len, dtype=torch.bool).triu(1))

    def forward(self, x):
        batch, seq, dim = x.shape
        # Attention. In the Dynamo stage every graph node records the source line below
        # that created it and its nn_module_stack (e.g. ln1, qkv).
        head_dim = dim // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(dim, dim=-1)
        q, k, v = (t.view(batch, seq, self.heads, head_dim).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(head_dim)
        # Kernels stage: scaling, masking and the softmax's max/exp/sum fuse into one
        # reduction kernel (triton_per_fused__softmax_* on GPU, cpp_fused__softmax_* on CPU).
        weights = scores.masked_fill(self.mask[:seq, :seq], float("-inf")).softmax(dim=-1)
        attn = (weights @ v).transpose(1, 2).reshape(batch, seq, dim)
        x = x + self.proj(attn)
        # MLP. The residual add fuses with the LayerNorm into one kernel and the GELU gets
        # its own, between the two matmuls (compare with 06_mlp_fusion.py).
        return x + self.mlp(self.ln2(x))


block = Block()
compiled = torch.compile(block)
out = compiled(torch.randn(2, 8, 32))
print("output shape:", tuple(out.shape))
