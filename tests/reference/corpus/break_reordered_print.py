# Adapted from PyTorch test/dynamo/test_reorder_logs.py::ReorderLogsTests.test_reorder_print_graph_break
# (pytorch/pytorch 7ba6bd01, read 2026-12-07; run here on torch 2.13.0, CPU).
# As the original: with print reorderable, only the user's graph_break() breaks the function.
import torch

torch._dynamo.config.reorderable_logging_functions = {print}


def f(x):
    x1 = x + x
    print(f"res: {x1}")
    x2 = x1 * x1
    torch._dynamo.graph_break()
    x3 = x2 + x2
    print(1, 2, 3)
    return x3


opt_f = torch.compile(backend="eager")(f)
print(opt_f(torch.ones(3, 3)))
