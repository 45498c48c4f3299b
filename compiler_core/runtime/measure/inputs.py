"""Calls to time: the grad modes, a call of a callable (forward, or forward and backward when
its outputs require grad), and random output gradients laid out like the outputs."""

from __future__ import annotations

import torch
from torch.utils._pytree import tree_flatten

GRAD_MODES = {"grad": torch.enable_grad, "no_grad": torch.no_grad,
              "inference_mode": torch.inference_mode}


def fresh_like(value):
    """Random values laid out like `value` (same storage size, strides, dtype, device)."""
    if not isinstance(value, torch.Tensor):
        return value
    size = value.untyped_storage().nbytes() // value.element_size()
    options = {"dtype": value.dtype, "device": value.device}
    with torch.no_grad():
        if value.dtype.is_floating_point or value.dtype.is_complex:
            base = torch.randn(size, **options)
        elif value.dtype == torch.bool:
            base = torch.rand(size, device=value.device) < 0.5
        else:
            low, high = (int(value.min()), int(value.max()) + 1) if value.numel() else (0, 1)
            base = torch.randint(low, high, (size,), **options)
        fresh = base.as_strided(value.size(), value.stride(), value.storage_offset()).detach()
    return fresh.requires_grad_(value.requires_grad)


def tensors(value) -> list[torch.Tensor]:
    return [leaf for leaf in tree_flatten(value)[0] if isinstance(leaf, torch.Tensor)]


def caller(fn, args, kwargs, grads: list | None):
    """A no-argument call of `fn`; with `grads`, forward and backward."""
    def call():
        out = fn(*args, **kwargs)
        if grads is not None:
            torch.autograd.backward([t for t in tensors(out) if t.requires_grad], grads)
        return out
    return call


def backward_grads(eager, args, kwargs) -> list | None:
    """Output gradients when the outputs require grad and backward runs, else None."""
    outs = [t for t in tensors(eager(*args, **kwargs)) if t.requires_grad]
    if not outs:
        return None
    grads = [fresh_like(t.detach()) for t in outs]
    try:
        torch.autograd.backward(outs, grads)
    except RuntimeError:  # e.g. the callable ran backward itself and freed the graph
        return None
    return grads
