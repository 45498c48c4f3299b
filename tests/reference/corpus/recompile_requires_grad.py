# Adapted from PyTorch test/dynamo/test_recompile_ux.py::RecompileUxTests.test_verbose_tensor_check
# (pytorch/pytorch 042f5345, read 2026-12-07; run here on torch 2.13.0, CPU).
# The requires_grad case: "tensor 'a' requires_grad mismatch. expected requires_grad=0".
import torch


def func(a):
    return torch.add(a, 4)


opt_func = torch.compile(func, backend="eager")
a = torch.ones(3, 4, 5)
opt_func(a)
a_grad = a.clone()
a_grad.requires_grad = True
print(opt_func(a_grad).requires_grad)
