import torch


def f(x):
    y = x.sin() + 1
    print("a graph break")
    return y.sin() + 1


torch.compile(f)(torch.randn(4096, 4096, device="cuda"))
