"""Dynamic shapes with dynamic=True

With dynamic=True, Dynamo traces with symbolic sizes from the first call, so one graph and one kernel serve every input shape.
"""
import torch

torch.manual_seed(0)


def f(x):
    # Row-wise centering: the graph records sizes as symbols (named like s77 and s27)
    # rather than 8 and 16 (Dynamo stage), and the generated kernel receives them as
    # arguments (ks0, ks1) instead of having them baked in as constants (Kernels stage).
    centered = x - x.mean(dim=1, keepdim=True)
    return centered.reshape(x.shape[0] * x.shape[1])


compiled = torch.compile(f, dynamic=True)
# The first call compiles (0/0). The guards (Guards view) only bound the symbols
# (e.g. 2 <= size), so the later calls with other shapes run the same graph: the
# Calls tab shows them as hits of 0/0, and there is no second compile.
out = compiled(torch.randn(8, 16))
print("output shape:", tuple(out.shape))
compiled(torch.randn(4, 16))
compiled(torch.randn(100, 32))
