# Adapted from PyTorch test/dynamo/test_reorder_logs.py::ReorderLogsTests.test_reorder_custom_log_fn
# (pytorch/pytorch 7ba6bd01, read 2026-12-07; run here on torch 2.13.0, CPU).
# Without marking custom_log reorderable: the graph_break() inside it, a function Dynamo inlines,
# breaks each frame that calls it (the break names custom_log's line), and aot_eager compiles.
import torch

custom_logs = []


def custom_log(s: str):
    torch._dynamo.graph_break()
    custom_logs.append(s)


def f(x):
    custom_log("moo")
    x1 = x + x
    custom_log(f"{x1}")
    return x + x


opt_f = torch.compile(backend="aot_eager")(f)
opt_f(torch.ones(3, 3))
print(opt_f(torch.ones(3, 3)))
