"""Training step with backward

Compiling a loss function lets AOTAutograd split it into a forward and a backward graph, both compiled by Inductor, and loss.backward() runs the compiled backward.
"""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)

model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def loss_fn(x, target):
    # Dynamo stage: one graph holding the model's forward pass and the loss.
    return F.mse_loss(model(x), target)


# Only the loss function is compiled; backward() and the optimizer run as usual.
compiled_loss = torch.compile(loss_fn)

x = torch.randn(8, 16)
target = torch.randn(8, 1)
# AOT stage: the joint graph is split into a forward graph and a backward graph; the
# forward saves what the backward needs (look for the saved tensors it returns, such
# as the ReLU output).
loss = compiled_loss(x, target)
# The backward graph runs here as compiled code, not through eager autograd (the
# Inductor and Kernels stages show a second output module, for the backward).
loss.backward()
optimizer.step()
optimizer.zero_grad()
print("loss:", round(loss.item(), 4))
