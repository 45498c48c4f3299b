"""Recompilation on a shape change

Dynamo first specialises a graph to the exact input shape, and a call with a new shape fails its guards and triggers a recompile with a dynamic dimension.
"""
import torch

torch.manual_seed(0)


def f(x):
    # x.shape[0] is baked into the first graph as the constant 8; in the second graph
    # it becomes a size symbol such as s77 (compare the two graphs in the Dynamo stage).
    return torch.relu(x) * x.shape[0]


compiled = torch.compile(f)

# Call 1 -> compile 0/0: a static graph for (8, 16). Its guards (Guards view) check
# the exact sizes of x.
out = compiled(torch.randn(8, 16))
print("first call:", tuple(out.shape))

# Call 2 -> compile 0/1: the size guard fails ("size mismatch at index 0. expected 8,
# actual 4" in the recompile reason). Having seen dim 0 change, Dynamo recompiles it
# as dynamic ("automatic dynamic"), so later batch sizes reuse this graph.
out = compiled(torch.randn(4, 16))
print("second call:", tuple(out.shape))
