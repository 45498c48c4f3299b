"""Graph break from .item()

Calling .item() turns a tensor into a Python number, which by default ends the graph because the number only exists once the graph has run.
"""
import torch

torch.manual_seed(0)


def normalize(x):
    # Graph 1 computes the maximum absolute value.
    peak = x.abs().max()
    # .item() copies the value out of the tensor into a Python float: graph break here
    # (Dynamo stage). Setting torch._dynamo.config.capture_scalar_outputs = True would
    # keep it in the graph as an unbacked symbol (u0) instead.
    scale = peak.item()
    # Graph 2 (in the resume function) has the float baked in as a constant and guards
    # on its exact value (EQUALS_MATCH in the Guards view), so an input with a different
    # maximum would recompile it.
    return x / scale


compiled = torch.compile(normalize)
out = compiled(torch.randn(8, 16))
print("output shape:", tuple(out.shape), "max:", round(out.abs().max().item(), 3))
