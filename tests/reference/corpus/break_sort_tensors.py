# Adapted from PyTorch test/dynamo/test_error_messages.py::ErrorMessagesTest.test_sort_with_nonconstant_keys
# (pytorch/pytorch f3ce4505, read 2026-12-07; run here on torch 2.13.0, CPU).
# Without fullgraph: sorting tensors by value is a graph break.
import torch


def fn(lst, y):
    y = y + 1
    return sorted(lst), y


lst = [torch.tensor(4), torch.tensor(1), torch.tensor(2), torch.tensor(3)]
opt_fn = torch.compile(fn, backend="eager")
print(opt_fn(lst, torch.ones(2)))
