"""Inference under torch.no_grad

Under torch.no_grad with the model in eval mode, AOTAutograd produces a single inference graph with no backward, and eval-mode BatchNorm becomes simple per-channel math that fuses with the ReLU.
"""
import torch
from torch import nn

torch.manual_seed(0)

model = nn.Sequential(nn.Conv2d(3, 8, kernel_size=3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
# eval(): BatchNorm uses its running statistics instead of batch statistics, so the
# graph needs no reduction over the batch and no buffer updates.
model.eval()
compiled = torch.compile(model)

with torch.no_grad():
    # AOT stage: an "inference graph" instead of forward + backward graphs.
    # Kernels stage: the convolution is an extern call; the BatchNorm affine math and
    # the ReLU fuse into one generated kernel after it.
    out = compiled(torch.randn(2, 3, 8, 8))
print("output shape:", tuple(out.shape))
