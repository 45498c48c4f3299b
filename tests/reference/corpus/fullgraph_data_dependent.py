# Adapted from PyTorch test/dynamo/test_error_messages.py::ErrorMessagesTest.test_data_dependent_branching_fullgraph
# (pytorch/pytorch f3ce4505, read 2026-12-07; run here on torch 2.13.0, CPU).
# As the original: fullgraph=True turns the data-dependent branch into an error.
import torch


def fn(x):
    if x.sum() > 0:
        return x.sin()
    return x.cos()


try:
    torch.compile(fn, backend="eager", fullgraph=True)(torch.ones(3))
except torch._dynamo.exc.Unsupported as e:
    print("fullgraph error:", str(e).splitlines()[0])
