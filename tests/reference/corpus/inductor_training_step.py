# Adapted from PyTorch test/inductor/test_torchinductor.py::CommonTemplate.test_linear1
# (pytorch/pytorch 82bdbe7f, read 2026-12-07; run here on torch 2.13.0, CPU).
# A training step through Inductor: Linear + Sigmoid forward, backward, an SGD step, twice.
import torch

torch.manual_seed(0)
mod = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Sigmoid())
opt_mod = torch.compile(mod)
sgd = torch.optim.SGD(mod.parameters(), lr=0.1)
x = torch.ones(2, 8)
for _ in range(2):
    loss = opt_mod(x).sum()
    loss.backward()
    sgd.step()
    sgd.zero_grad()
print(loss.item())
