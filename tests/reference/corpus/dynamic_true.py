# Adapted from PyTorch test/dynamo/test_recompiles.py::RecompileTests.test_automatic_dynamic_reduce_recompiles
# (pytorch/pytorch 05b5b755, read 2026-12-07; run here on torch 2.13.0, CPU).
# The dynamic=True run: one symbolic graph serves every size.
import torch


def foo(x, y):
    return x * y


opt = torch.compile(foo, backend="eager", dynamic=True)
for n in [2, 3, 4, 4, 5]:
    opt(torch.ones(n), torch.ones(n))
print("done")
