# Adapted from PyTorch test/dynamo/test_recompile_ux.py::RecompileUxTests.test_recompile_child_run_only
# (pytorch/pytorch 042f5345, read 2026-12-07; run here on torch 2.13.0, CPU).
# Nested compiled functions with recompile_limit=1: g is compiled on its own first; f inlines
# g and h; f's second call (n changed) is past the limit, so f runs eagerly, and its call of g
# runs g's own compiled code from before (as the original asserts).
import torch

torch._dynamo.config.recompile_limit = 1


def f(x, n):
    if torch.compiler.is_compiling():
        x = x + 1
    x = g(x)
    return h(x) + n


def g(x):
    if torch.compiler.is_compiling():
        return x + 2
    return x


def h(x):
    if torch.compiler.is_compiling():
        return x + 4
    return x


torch.compile(g, backend="eager")(torch.ones(3))
inp = torch.ones(3)
opt_f = torch.compile(f, backend="eager")
opt_f(inp, 0)
print(opt_f(inp, 1))
