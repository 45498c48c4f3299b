# Adapted from PyTorch test/dynamo/test_error_messages.py::ErrorMessagesTest.test_data_dependent_branching_fullgraph
# (pytorch/pytorch f3ce4505, read 2026-12-07; run here on torch 2.13.0, CPU).
# Without fullgraph: the branch on a tensor's value is a graph break ("Data-dependent
# branching"); with fullgraph=True the same function is an error (fullgraph_data_dependent.py).
import torch


def fn(x):
    if x.sum() > 0:
        return x.sin()
    return x.cos()


opt_fn = torch.compile(fn, backend="eager")
print(opt_fn(torch.ones(3)))
print(opt_fn(-torch.ones(3)))
