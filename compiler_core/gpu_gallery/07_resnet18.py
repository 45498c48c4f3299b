"""ResNet-18 from torchvision (inference)

A real vision model with random weights in eval mode, batch 8 at 224x224 in fp32: Inductor folds each batch norm into the convolution before it and fuses the ReLUs and residual adds; convolutions stay library kernels. Needs torchvision.
"""
import torch
import torchvision

device = "cuda" if torch.cuda.is_available() else "cpu"
batch, size = (8, 224) if device == "cuda" else (1, 64)

torch.manual_seed(0)
model = torchvision.models.resnet18(weights=None).to(device).eval()
images = torch.randn(batch, 3, size, size, device=device)
with torch.no_grad():
    logits = torch.compile(model)(images)
print("logits:", tuple(logits.shape))
