# Adapted from PyTorch test/dynamo/test_recompile_ux.py::RecompileLimitKwargTests.test_recompile_limit_resume_function_auto_dynamic
# (pytorch/pytorch 042f5345, read 2026-12-07; run here on torch 2.13.0, CPU).
# The code after a print would run in a resume function that reads a global tensor whose shape
# changes between calls; the original asserts that the resume function recompiles up to the
# recompile_limit=2 given to torch.compile. On torch 2.13 Dynamo compiles no resume function
# here (f's entry serves every call, the code after the print runs eagerly): a case where
# nothing recompiles although a guarded-looking value changes.
import torch

torch._dynamo.config.automatic_dynamic_shapes = True
y_holder = {"tensor": torch.ones(4, 8, 2)}


def f(x):
    x.sin()
    print("graph break")
    return y_holder["tensor"].cos()


opt_f = torch.compile(f, backend="eager", recompile_limit=2)
for shape in [(4, 8, 2), (5, 8, 2), (5, 9, 2), (5, 9, 3)]:
    y_holder["tensor"] = torch.ones(*shape)
    opt_f(torch.ones(4, 8, 2))
print("done")
