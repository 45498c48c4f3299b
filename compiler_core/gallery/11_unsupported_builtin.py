"""Graph break from an unsupported builtin

Dynamo cannot trace into C builtins it does not model, such as time.perf_counter(), so calling one inside a compiled function breaks the graph.
"""
import time

import torch

torch.manual_seed(0)

timestamps = []


def f(x):
    y = torch.sin(x) * 2
    # time.perf_counter is implemented in C and Dynamo has no model of it: graph break
    # here ("Attempted to call function marked as skipped" in the Dynamo stage).
    # Fix: take timestamps outside the compiled region, or wrap such helpers in
    # torch.compiler.disable.
    timestamps.append(time.perf_counter())
    return torch.cos(y)


compiled = torch.compile(f)
out = compiled(torch.randn(8, 16))
print("output shape:", tuple(out.shape), "timestamps taken:", len(timestamps))
