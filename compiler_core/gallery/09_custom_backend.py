"""Custom backend that prints its graph

A torch.compile backend is just a function that receives each FX graph Dynamo captures plus example inputs, and returns a callable to run instead.
"""
import torch

torch.manual_seed(0)


def my_backend(gm, example_inputs):
    # Dynamo calls the backend once per captured graph. gm is a torch.fx.GraphModule;
    # example_inputs are tensors with the shapes of its placeholders.
    print(f"my_backend received a graph with {len(example_inputs)} input(s):")
    for node in gm.graph.nodes:
        # op is placeholder / call_function / call_method / output; target is what runs
        # and args name the nodes it reads.
        target = getattr(node.target, "__name__", node.target)
        print(f"  {node.op:<14} {node.name:<8} {target:<8} {node.args}")
    # Returning gm.forward runs the graph as captured (eagerly): no AOT or Inductor
    # stages appear for this script, only Dynamo's.
    return gm.forward


def f(x, y):
    return torch.tanh(x) @ y.t() + 1


compiled = torch.compile(f, backend=my_backend)
out = compiled(torch.randn(8, 16), torch.randn(4, 16))
print("output shape:", tuple(out.shape))
