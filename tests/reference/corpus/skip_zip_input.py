# Adapted from PyTorch test/dynamo/test_error_messages.py::ErrorMessagesTest.test_super_call_method
# (pytorch/pytorch f3ce4505, read 2026-12-07; run here on torch 2.13.0, CPU).
# Without fullgraph: a zip passed in from eager code cannot be iterated by Dynamo, so it skips
# the frame that iterates it and runs that frame eagerly.
import torch


def fn(it, x):
    x = x + 1
    return [x * i for i, _ in it]


opt_fn = torch.compile(fn, backend="eager")
print(opt_fn(zip(range(3), range(5)), torch.ones(2)))
print(opt_fn(zip(range(3), range(5)), torch.ones(2)))
