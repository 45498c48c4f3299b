# Adapted from PyTorch test/dynamo/test_reorder_logs.py::IgnoreLogsTests.test_ignore_logger
# (pytorch/pytorch 7ba6bd01, read 2026-12-07; run here on torch 2.13.0, CPU).
# The case (None, f_info, False): a logging call is a graph break unless ignored.
import logging

import torch

logger = logging.getLogger(__name__)


def f_info(x):
    x = x + x
    logger.info("moo")
    x = x * x
    return x


opt_f = torch.compile(backend="eager")(f_info)
print(opt_f(torch.ones(3, 3)))
