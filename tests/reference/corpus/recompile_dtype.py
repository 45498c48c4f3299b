# Adapted from PyTorch test/dynamo/test_recompile_ux.py::RecompileUxTests.test_verbose_tensor_check
# (pytorch/pytorch 042f5345, read 2026-12-07; run here on torch 2.13.0, CPU).
# The dtype case: "tensor 'a' dtype mismatch. expected Float, actual Half".
import torch


def func(a):
    return torch.add(a, 4)


opt_func = torch.compile(func, backend="eager")
a = torch.ones(3, 4, 5)
opt_func(a)
print(opt_func(a.to(torch.float16)).dtype)
