"""Same code, two torch versions

Where worker hosts with torch 2.13 and 2.14 are connected, "⇆ Both" beside the environment picker runs this in each and diffs the runs stage by stage: the Dynamo graph is the same, but the output code's wrapper differs: torch 2.13 checks each input of the compiled graph with its own assert_size_stride call, torch 2.14 checks them all in one assert_size_stride_grouped call.
"""
import torch


def f(x, y):
    # Two tensor inputs: the wrapper checks the size and stride of each before the kernel runs
    # (Output code stage, the call() function).
    return torch.sin(x) + torch.cos(y)


print("torch", torch.__version__)
torch.compile(f)(torch.randn(8), torch.randn(8))
