# Adapted from PyTorch test/dynamo/test_autograd_function.py::AutogradFunctionTests.test_requires_grad_in_bwd
# (pytorch/pytorch 011322a3, read 2026-12-07; run here on torch 2.13.0, CPU).
# As the original: an autograd.Function traced whole (fullgraph) with aot_eager, then backward.
import torch


class Foo(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x + 1)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.cos(x + 1)


@torch.compile(backend="aot_eager", fullgraph=True)
def fn(x):
    return Foo.apply(x)


x = torch.tensor([1.0, 3.0], requires_grad=True)
res = fn(x)
res.sum().backward()
print(x.grad)
