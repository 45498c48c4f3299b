"""Data-dependent branch

An `if` on a tensor's value (`if y.sum() > 0:`) breaks the graph, because the branch taken is only known after the first graph has run.
"""
import torch

torch.manual_seed(0)


def f(x):
    y = x * 2
    # `y.sum() > 0` is a tensor, and Python's `if` needs a real bool. Graph 1 ends by
    # computing the condition; the branch itself is decided eagerly (Dynamo stage:
    # the break reason points at this line). To keep one graph, express the choice as
    # data, torch.where(y.sum() > 0, ...), or use torch.cond.
    if y.sum() > 0:
        # Graph 2 is traced only for the branch actually taken on this input.
        return torch.relu(y)
    return torch.tanh(y)


compiled = torch.compile(f)
out = compiled(torch.randn(8, 16))
print("output shape:", tuple(out.shape))
