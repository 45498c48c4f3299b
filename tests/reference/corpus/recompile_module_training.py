# Adapted from PyTorch test/dynamo/test_recompiles.py::RecompileTests.test_simple_module_recompile
# (pytorch/pytorch 05b5b755, read 2026-12-07; run here on torch 2.13.0, CPU).
# A module's `training` flag flips between calls: one compile per mode, then hits.
import torch


class SimpleDropout(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.dropout = torch.nn.Dropout(0.5)
        self.linear = torch.nn.Linear(10, 1)

    def forward(self, x):
        return self.dropout(self.linear(x))


model = SimpleDropout()
x = torch.ones(10)
model = torch.compile(model, backend="eager", fullgraph=True)
for _ in range(2):
    model.eval()
    model(x)
    model.train()
    model(x)
print("done")
