# Adapted from PyTorch test/dynamo/test_decorators.py::DecoratorTests.test_disable_for_custom_op
# (pytorch/pytorch d2ca5f23, read 2026-12-07; run here on torch 2.13.0, CPU).
# A helper marked with torch._dynamo.disable is skipped: the compiled function breaks around it
# and the helper runs eagerly.
import torch


@torch._dynamo.disable
def helper(x):
    return x.cos()


def fn(x):
    x = x.sin()
    x = helper(x)
    return x * 2


opt_fn = torch.compile(fn, backend="eager")
print(opt_fn(torch.ones(3)))
