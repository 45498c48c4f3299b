# Adapted from PyTorch test/dynamo/test_recompiles.py::RecompileTests.test_automatic_dynamic_reduce_recompiles
# (pytorch/pytorch 05b5b755, read 2026-12-07; run here on torch 2.13.0, CPU).
# The dynamic=None (automatic dynamic) run: the second size marks dim 0 dynamic, so 6 sizes
# cost 2 compiles.
import torch


def foo(x, y):
    return x * y


opt = torch.compile(foo, backend="eager")
for n in [2, 3, 4, 4, 5, 5, 6]:
    opt(torch.ones(n), torch.ones(n))
print("done")
