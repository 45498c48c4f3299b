# Adapted from PyTorch test/dynamo/test_error_messages.py::ErrorMessagesTest.test_unsupported_builtin
# (pytorch/pytorch f3ce4505, read 2026-12-07; run here on torch 2.13.0, CPU).
# The original compiles with fullgraph=True and expects the error; here without it, the print is
# a graph break: two graphs, one break at the print, and the second call hits both.
import torch


def fn(x):
    x = x + 1
    print("abc")
    return x.sin()


opt_fn = torch.compile(fn, backend="eager")
opt_fn(torch.ones(3))
print(opt_fn(torch.ones(3)))
