"""Compiled autograd: the whole backward as one graph

With torch._dynamo.config.compiled_autograd on, loss.backward() inside a compiled function is traced by compiled autograd into one FX graph of the whole backward (its compile !0, the Compiled autograd graph stage), which Dynamo and Inductor then compile like any other graph (compile !0/N/0: Dynamo numbers it as a frame of its own, 1 under torch 2.13 and 2 under 2.15).
"""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
# Compiled autograd: backward() in a compiled function is traced, not run by eager autograd.
torch._dynamo.config.compiled_autograd = True

model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


@torch.compile
def train_step(x, target):
    # Dynamo stage: the forward and the loss, in one graph (0/0).
    loss = F.mse_loss(model(x), target)
    # Dynamo breaks the graph here; compiled autograd traces the backward of every parameter
    # (the Compiled autograd graph stage of compile !0), then Dynamo compiles that graph.
    loss.backward()
    return loss


x = torch.randn(8, 16)
target = torch.randn(8, 1)
loss = train_step(x, target)
optimizer.step()
optimizer.zero_grad()
print("loss:", round(loss.item(), 4))
