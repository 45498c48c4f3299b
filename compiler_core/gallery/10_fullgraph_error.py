"""fullgraph=True refuses a graph break

With fullgraph=True, torch.compile raises an error at the first graph break instead of silently splitting the function, pointing at the offending line.
"""
import torch

torch.manual_seed(0)


def f(x):
    y = torch.relu(x)
    # Without fullgraph=True this print would only split f into two graphs (see
    # 01_print_graph_break.py); with it, compilation stops with an error naming this line.
    print("this print is a graph break")
    return y * 2


compiled = torch.compile(f, fullgraph=True)
try:
    compiled(torch.randn(8, 16))
except RuntimeError as err:  # torch._dynamo.exc.Unsupported, a RuntimeError subclass
    # The message gives the break reason, hints, and the user line ("from user code");
    # no graph is compiled, so the later stages stay empty.
    print(f"torch.compile(fullgraph=True) raised {type(err).__name__}:")
    print(err)
