"""Training step (forward and backward)

An MLP trained with AdamW: the compiled module's forward and backward are two Inductor graphs whose pointwise work (bias, GELU, LayerNorm and their gradients) fuses around the matmuls; the timing covers forward plus backward.
"""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
batch, dim = (8192, 2048) if device == "cuda" else (64, 64)

model = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim),
                      nn.LayerNorm(dim)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
compiled = torch.compile(model)
x = torch.randn(batch, dim, device=device)
target = torch.randn(batch, dim, device=device)
for step in range(3):
    loss = F.mse_loss(compiled(x), target)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    print(f"step {step}: loss {loss.item():.4f}")
