# Adapted from PyTorch test/dynamo/test_error_messages.py::ErrorMessagesTest.test_unsupported_builtin
# (pytorch/pytorch f3ce4505, read 2026-12-07; run here on torch 2.13.0, CPU).
# As the original: print under fullgraph=True is an error, then the same function compiles
# without fullgraph (one break, a graph after it).
import torch


def fn(x):
    print("abc")
    return x + 1


try:
    torch.compile(fn, backend="eager", fullgraph=True)(torch.ones(2))
except torch._dynamo.exc.Unsupported as e:
    print("fullgraph error:", str(e).splitlines()[0])
print(torch.compile(fn, backend="eager")(torch.ones(2)))
