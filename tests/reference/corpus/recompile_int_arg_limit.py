# Adapted from PyTorch test/dynamo/test_recompiles.py::RecompileTests.test_no_recursive_compile_after_cache_limit_hit
# (pytorch/pytorch 05b5b755, read 2026-12-07; run here on torch 2.13.0, CPU).
# A constant int argument with dynamic=False: each new value of n recompiles f (the cache limit
# of 2 stops it after two), and f's calls to g and h are inlined, never compiled alone.
import torch

torch._dynamo.config.recompile_limit = 2


def f(x, n):
    x = x + n
    return g(x, n)


def g(x, n):
    x = x + n
    return h(x, n)


def h(x, n):
    return x + n


opt_f = torch.compile(f, backend="eager", dynamic=False)
for i in range(4):
    opt_f(torch.ones(3), i)
print(opt_f(torch.ones(3), 0))
