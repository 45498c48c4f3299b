"""ViT-tiny from timm (inference)

A vision transformer with random weights (timm's vit_tiny_patch16_224, no download), batch 8 at 224x224 in fp32: the patch embedding is a convolution, each block's layer norms, GELU and residual adds fuse around the attention and MLP matmuls. Needs timm.
"""
import timm
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
batch = 8 if device == "cuda" else 1

torch.manual_seed(0)
model = timm.create_model("vit_tiny_patch16_224", pretrained=False).to(device).eval()
images = torch.randn(batch, 3, 224, 224, device=device)
with torch.no_grad():
    logits = torch.compile(model)(images)
print("logits:", tuple(logits.shape))
