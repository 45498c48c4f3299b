# Adapted from PyTorch test/dynamo/test_autograd_function.py::AutogradFunctionTests.test_function_with_bound_free_variable
# (pytorch/pytorch 011322a3, read 2026-12-07; run here on torch 2.13.0, CPU).
# With a print added to the Function's forward: a graph break inside an autograd.Function,
# which Dynamo traces as a higher-order op.
import torch


class LowerBound(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inputs, bound):
        print("in forward")
        ctx.save_for_backward(inputs, inputs.new_ones(1) * bound)
        return inputs.clamp(min=bound)

    @staticmethod
    def backward(ctx, grad_output):
        inputs, bound = ctx.saved_tensors
        return (inputs >= bound) * grad_output, None


class MyMod(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gamma = torch.nn.Parameter(torch.ones([2, 3]))

    def forward(self, x):
        gamma = LowerBound.apply(self.gamma, 1)
        return x + gamma


compiled_model = torch.compile(MyMod(), backend="eager")
print(compiled_model(torch.ones([2, 3])))
