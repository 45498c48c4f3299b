# Adapted from PyTorch test/dynamo/test_recompile_ux.py::RecompileUxTests.test_nvfuser_guards
# (pytorch/pytorch 042f5345, read 2026-12-07; run here on torch 2.13.0, CPU).
# On CPU and through Inductor: a view with the same strides as the first input hits the cache,
# a permuted input (other strides) recompiles.
import torch

torch._dynamo.config.recompile_limit = 2


def func(a, b, c):
    return a + b * c


a = torch.ones(3, 4, 5)
b = torch.ones(3, 4, 5)
b_v = torch.ones(3, 5, 4).view(3, 4, 5)
b_p = torch.ones(3, 5, 4).permute(0, 2, 1)
c = torch.ones(3, 4, 5)
opt_func = torch.compile(func)
opt_func(a, b, c)
opt_func(a, b, c)
opt_func(a, b_v, c)
print(opt_func(a, b_p, c).sum())
