# Adapted from PyTorch test/dynamo/test_error_messages.py::ErrorMessagesTest.test_skipfile_call
# (pytorch/pytorch f3ce4505, read 2026-12-07; run here on torch 2.13.0, CPU).
# Without fullgraph: calling a function Dynamo marks as skipped (unittest.skip) is a break.
import unittest

import torch


def fn(x):
    x = x.cos()
    unittest.skip("test")
    return x * 2


opt_fn = torch.compile(fn, backend="eager")
print(opt_fn(torch.ones(3)))
