"""Transformer block in bf16 (inference)

A pre-norm block (LayerNorm, attention through scaled_dot_product_attention, MLP with GELU) in bf16 under no_grad: matmuls and attention stay library kernels, the norms, residual adds and activations fuse into Triton kernels.
"""
import torch
from torch import nn
from torch.nn import functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"
batch, seq, dim, heads = (8, 1024, 1024, 16) if device == "cuda" else (2, 16, 64, 4)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.up, self.down = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x):
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (t.view(batch, seq, heads, dim // heads).transpose(1, 2) for t in (q, k, v))
        attention = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attention.transpose(1, 2).reshape(batch, seq, dim))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


block = Block().to(device=device, dtype=torch.bfloat16).eval()
x = torch.randn(batch, seq, dim, device=device, dtype=torch.bfloat16)
with torch.no_grad():
    out = torch.compile(block)(x)
print("output:", tuple(out.shape), out.dtype)
