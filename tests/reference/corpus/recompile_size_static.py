# Adapted from PyTorch test/dynamo/test_recompile_ux.py::RecompileUxTests.test_verbose_tensor_check
# (pytorch/pytorch 042f5345, read 2026-12-07; run here on torch 2.13.0, CPU).
# The size case, with dynamic=False so that every new size recompiles: "tensor 'a' size
# mismatch at index 0. expected 3, actual 2".
import torch


def func(a):
    return torch.add(a, 4)


opt_func = torch.compile(func, backend="eager", dynamic=False)
a = torch.ones(3, 4, 5)
opt_func(a)
opt_func(a[0:2, :, :])
opt_func(a[0:2, :, :])
print(opt_func(a).shape)
