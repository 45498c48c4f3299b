# Adapted from PyTorch test/dynamo/test_recompile_ux.py::RecompileUxTests.test_dynamic_input
# (pytorch/pytorch 042f5345, read 2026-12-07; run here on torch 2.13.0, CPU).
# recompile_limit set low (2) with automatic dynamic shapes off: every new batch size
# recompiles until the limit, then Dynamo stops compiling the function and runs it eagerly
# (a warning "torch._dynamo hit config.recompile_limit").
import torch

torch._dynamo.config.automatic_dynamic_shapes = False
torch._dynamo.config.recompile_limit = 2


def model(input):
    return input + input


opt_model = torch.compile(model, backend="eager")
for bsz in [2, 3, 4, 5, 2]:
    opt_model(torch.ones(bsz, 3, 4))
print("done")
