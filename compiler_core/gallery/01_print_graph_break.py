"""Graph break from print

A print() inside a compiled function splits it into two graphs: Dynamo compiles the code before the print, runs print eagerly, and resumes in a new frame.
"""
import torch

torch.manual_seed(0)


def f(x):
    # Graph 1: Dynamo traces these ops into the first FX graph (Dynamo stage).
    y = torch.sin(x) * 2
    # print() writes to stdout, a side effect that cannot live inside a graph, so
    # Dynamo stops here: this line is the graph break (see its reason in the Dynamo stage).
    # Adding print to torch._dynamo.config.reorderable_logging_functions would instead
    # let Dynamo move the print after the graph and keep one graph.
    print("inside f, between the two graphs")
    # Graph 2: Dynamo resumes after the print in a generated "resume function"
    # (see the Bytecode stage) and traces the rest into a second graph.
    return torch.cos(y) + 1


compiled = torch.compile(f)
out = compiled(torch.randn(8, 16))
print("output shape:", tuple(out.shape))
