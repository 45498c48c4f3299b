"""torch.export beside torch.compile

Ahead of time, torch.export captures one whole graph with its signature (parameters become inputs) and the range of each dynamic size; just in time, torch.compile captures graphs as the code runs, guarded for the inputs it saw.
"""
import torch

torch.manual_seed(0)


class Gate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 16)

    def forward(self, x):
        return torch.nn.functional.gelu(self.proj(x)) * x


model = Gate()
x = torch.randn(4, 16)

# Export: the batch size is declared dynamic, so the program holds for every batch >= 2 (its
# "Range constraints"); the weights are lifted into inputs (its "Graph signature").
batch = torch.export.Dim("batch", min=2)
program = torch.export.export(model, (x,), dynamic_shapes={"x": {0: batch}})
print(program.graph_signature)

# Compile: Dynamo traces forward on this call's input; its graph keeps the module's
# parameters as attributes, and its guards say when the graph may be reused.
compiled = torch.compile(model)
print("same output:", torch.allclose(compiled(x), program.module()(x), atol=1e-6))
