# Adapted from PyTorch test/dynamo/test_error_messages.py::ErrorMessagesTest.test_dynamo_graph_break_fn
# (pytorch/pytorch f3ce4505, read 2026-12-07; run here on torch 2.13.0, CPU).
# Without fullgraph: the user's own graph break splits the function in two graphs.
import torch


def fn(x):
    y = x * 2
    torch._dynamo.graph_break()
    return y + 1


opt_fn = torch.compile(fn, backend="eager")
print(opt_fn(torch.ones(4)))
print(opt_fn(torch.ones(4)))
