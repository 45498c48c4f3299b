# Adapted from PyTorch test/dynamo/test_error_messages.py::ErrorMessagesTest.test_unsupported_context
# (pytorch/pytorch f3ce4505, read 2026-12-07; run here on torch 2.13.0, CPU).
# A graph break inside a with block of a context manager Dynamo does not know: the whole frame
# is skipped and runs eagerly (no graph).
import torch


class GenericCtxMgr:
    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        pass


def fn(x):
    x = x + 1
    with GenericCtxMgr():
        print("in ctx")
        x = x * 2
    return x.sin()


opt_fn = torch.compile(fn, backend="eager")
print(opt_fn(torch.ones(3)))
