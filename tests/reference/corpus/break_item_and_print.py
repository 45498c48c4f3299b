# Adapted from PyTorch test/dynamo/test_reorder_logs.py::ReorderLogsTests.test_constant_mutation
# (pytorch/pytorch 7ba6bd01, read 2026-12-07; run here on torch 2.13.0, CPU).
# Without reorderable print: each print and each .item() (capture_scalar_outputs is off by
# default) is a graph break.
import torch


def f(x):
    alist = [x]
    alist.append(x + 1)
    print(alist[-1])
    alist[0].sum().item()  # graph break
    res = alist.pop()
    print(alist[-1])
    res.sum().item()  # graph break
    return res


opt_f = torch.compile(backend="eager")(f)
print(opt_f(torch.tensor([1])))
