"""Evicts the GPU's L2 cache before cold-cache timings, with a kernel named for what it does, so
that profiles can leave it out by name."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

NAME = "torchbolt_flush_l2"
BLOCK = 4096


@triton.jit
def torchbolt_flush_l2(buffer, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(buffer + offsets, offsets, mask=offsets < n)


class L2Flush:
    """Writes four times the L2 size (at least twice is needed) on the current stream."""

    def __init__(self) -> None:
        l2_bytes = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
        self.buffer = torch.empty(4 * l2_bytes // 4, dtype=torch.int32, device="cuda")
        self.bytes = self.buffer.numel() * 4

    def __call__(self) -> None:
        n = self.buffer.numel()
        torchbolt_flush_l2[(triton.cdiv(n, BLOCK),)](self.buffer, n, BLOCK=BLOCK)
