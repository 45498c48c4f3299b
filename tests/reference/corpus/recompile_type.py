# Adapted from PyTorch test/dynamo/test_recompile_ux.py::RecompileUxTests.test_mismatched_type
# (pytorch/pytorch 042f5345, read 2026-12-07; run here on torch 2.13.0, CPU).
# A tensor argument replaced by an int: the type check fails and the function recompiles.
import torch


def func(a, b):
    return a + b


opt_func = torch.compile(func, backend="eager")
a = torch.ones(3, 4, 5)
opt_func(a, torch.ones(3, 4, 5))
print(opt_func(a, 1).sum())
