"""Trace vs script vs compile

The same data-dependent `if` three ways: torch.jit.trace bakes in the branch it saw (and warns), torch.jit.script keeps both branches as prim::If, torch.compile breaks the graph at the `if` and compiles the branch taken.
"""
import torch


def f(x):
    if x.sum() > 0:  # a tensor's value decides the branch
        return torch.sin(x) * 2
    return torch.cos(x) - 1


x = torch.linspace(-1.0, 2.0, 8)  # sum > 0: the `sin` branch

# Tracing runs f once and records the ops that ran: the `if` is gone, `sin` is baked in, and
# PyTorch warns (TracerWarning) that the trace might not generalize. In a pane's compile
# menu, "jit.trace @ line 19" shows its TorchScript graph.
traced = torch.jit.trace(f, x)
# Scripting compiles f's source: both branches stay, as prim::If ("jit.script @ line 21").
scripted = torch.jit.script(f)
# Dynamo runs Python itself: graph 0/0 ends at the `if` (a graph break), the branch taken
# resumes in a new frame, compiled as 1/0; the other branch would compile when first taken.
compiled = torch.compile(f)

negative = -x
print("trace on -x :", traced(negative)[:3])  # still sin: the baked-in branch, wrong
print("script on -x:", scripted(negative)[:3])  # cos: right
print("eager on -x :", f(negative)[:3])
print("compile on x:", compiled(x)[:3])
