"""Inputs and correctness for timing a compiled callable on a call the script made.

- Inputs are fresh random tensors with the shapes, strides, dtypes and devices of the recorded
  ones (never zeros; integers stay in the recorded range so that indices stay valid).
- The grad mode is the one the script compiled for: the compiled callable is probed under
  `torch.compiler.set_stance("fail_on_recompile")`, so timing never triggers a compile. When the
  outputs require grad, each timed call runs forward and backward.
- Correctness: compiled against eager output with a dtype-aware tolerance; eager is run twice,
  and a callable whose eager output changes between runs (state, randomness) is labelled not
  comparable.
"""

from __future__ import annotations

import torch
from torch.utils._pytree import tree_flatten, tree_map

TOLERANCE = {torch.float64: 1e-7, torch.float32: 1e-4, torch.float16: 1e-2,
             torch.bfloat16: 5e-2}  # on |compiled - eager|, relative to max(1, max|eager|)
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


def fresh_inputs(call: tuple[tuple, dict]) -> tuple[tuple, dict]:
    args, kwargs = call
    return tree_map(fresh_like, args), tree_map(fresh_like, kwargs)


def tensors(value) -> list[torch.Tensor]:
    return [leaf for leaf in tree_flatten(value)[0] if isinstance(leaf, torch.Tensor)]


def clone(value):
    if not isinstance(value, torch.Tensor):
        return value
    return value.detach().clone().requires_grad_(value.requires_grad)


def compare(expected, actual) -> dict:
    """Largest absolute and relative (to the largest |expected|) error over all outputs."""
    pairs = list(zip(tensors(expected), tensors(actual)))
    if len(pairs) != len(tensors(expected)) or len(pairs) != len(tensors(actual)):
        return {"ok": False, "reason": "different number of tensor outputs"}
    result = {"ok": True, "max_abs": 0.0, "max_rel": 0.0, "outputs": len(pairs), "dtypes": []}
    for e, a in pairs:
        if e.shape != a.shape or e.dtype != a.dtype:
            return {"ok": False, "reason": f"output {list(e.shape)} {e.dtype} became "
                                           f"{list(a.shape)} {a.dtype}"}
        dtype = e.dtype
        e, a = e.detach().double().cpu(), a.detach().double().cpu()
        if not torch.equal(e.isnan(), a.isnan()):
            return {"ok": False, "reason": "NaN in different places"}
        scale = float(e.nan_to_num(0, 0, 0).abs().max()) if e.numel() else 0.0
        error = float((e - a).nan_to_num(0, 0, 0).abs().max()) if e.numel() else 0.0
        tolerance = TOLERANCE.get(dtype, 0.0)
        result["max_abs"] = max(result["max_abs"], error)
        result["max_rel"] = max(result["max_rel"], error / scale if scale else error)
        result["ok"] = result["ok"] and error <= tolerance * max(1.0, scale)
        result["dtypes"].append(str(dtype).removeprefix("torch."))
    return result


def check(eager_fn, compiled_fn, args, kwargs) -> dict:
    """Compiled against eager on the same inputs; eager against itself first."""
    def run(fn):
        torch.manual_seed(0)
        return fn(*tree_map(clone, args), **tree_map(clone, kwargs))
    first, second = run(eager_fn), run(eager_fn)
    if not compare(first, second)["ok"]:
        return {"ok": None, "reason": "not comparable: eager output changes from call to call "
                                      "(the callable changes state or draws random numbers)"}
    return compare(first, run(compiled_fn))


def grad_mode_of(compiled, args, kwargs) -> str:
    """The grad mode under which the compiled callable runs without compiling again."""
    errors = []
    for name, mode in GRAD_MODES.items():
        try:
            with mode(), torch.compiler.set_stance("fail_on_recompile"):
                compiled(*args, **kwargs)
            return name
        except Exception as exc:  # a guard failed in this mode (or the call failed): next
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
    raise RuntimeError("the compiled callable would compile again under every grad mode; "
                       + " | ".join(errors)[:2000])


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
