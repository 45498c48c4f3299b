# Adapted from PyTorch test/inductor/test_torchinductor.py::CommonTemplate.test_add_const_int
# (pytorch/pytorch 82bdbe7f, read 2026-12-07; run here on torch 2.13.0, CPU).
# One Inductor graph on CPU (C++ kernels), called twice: a compile, then a hit.
import torch


def fn(a):
    return (a + 1, torch.add(a, 1, alpha=2))


opt_fn = torch.compile(fn)
opt_fn(torch.arange(8, dtype=torch.float32))
print(opt_fn(torch.arange(8, dtype=torch.float32)))
