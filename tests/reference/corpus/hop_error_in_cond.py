# Adapted from PyTorch test/dynamo/test_higher_order_ops.py::HigherOrderOpTests.test_cond_graph_break_in_one_branch
# (pytorch/pytorch c7d3fbc9, read 2026-12-07; run here on torch 2.13.0, CPU).
# torch.cond whose true branch mutates a buffer: Dynamo cannot trace the branch as a subgraph
# and raises UncapturedHigherOrderOpError (never a graph break), as the original asserts.
import torch


class Foo(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.buffer = torch.nn.Buffer(torch.ones(6, 4))

    def forward(self, x):
        def true_fn(x):
            self.buffer += 1
            return self.buffer.sum() + x.sum()

        def false_fn(x):
            return (x - 1).sum()

        return torch.cond(x.sum() > 4, true_fn, false_fn, [x])


mod_for_compile = torch.compile(Foo(), backend="eager")
try:
    print(mod_for_compile(torch.ones(6, 4)))
except Exception as e:
    print(type(e).__name__)
