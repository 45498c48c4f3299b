"""Is the compiled output right? Judged as PyTorch's benchmark runner judges it (accuracy mode).

The reference is the original callable run in float64 (a module is copied and cast, floating
arguments are cast; `benchmarks/dynamo/common.py` does the same), where that can run; a function
whose weights live outside its arguments cannot be cast and is judged against eager. The verdict
is `torch._dynamo.utils.same(eager, compiled, fp64_ref, tol=...)`: compiled passes when it is
close to eager, or when its RMSE against float64 is at most 2-3x eager's (so Inductor's
reordered arithmetic, e.g. batch norm folded into convolutions, passes while a wrong kernel does
not). Outputs of a million elements or more use cosine similarity (>= 0.99), as the runner's
`--cosine` mode. The measured errors are shown beside the verdict.
"""

from __future__ import annotations

import copy

import torch
from torch._dynamo.utils import rmse, same
from torch.utils._pytree import tree_map

from .inputs import tensors

TOLERANCE = {torch.float64: 1e-7, torch.float32: 1e-4, torch.float16: 1e-3,
             torch.bfloat16: 1e-2}  # `same`'s tol per output dtype (the runner's defaults)
COSINE_NUMEL = 1_000_000


def _quiet(*_args, **_kwargs) -> None:
    """`same` logs each failure as an error; the verdict is reported instead."""


def structure_error(expected, actual) -> str | None:
    """Why two outputs cannot be compared element by element, or None."""
    e, a = tensors(expected), tensors(actual)
    if len(e) != len(a):
        return "different number of tensor outputs"
    for x, y in zip(e, a):
        if x.shape != y.shape or x.dtype != y.dtype:
            return f"output {list(x.shape)} {x.dtype} became {list(y.shape)} {y.dtype}"
        if not torch.equal(x.detach().isnan().cpu(), y.detach().isnan().cpu()):
            return "NaN in different places"
    return None


def _pair_errors(expected, actual) -> list[tuple[torch.dtype, float, float]]:
    """(dtype, largest |actual - expected|, largest |expected|) of each non-empty output."""
    out = []
    for e, a in zip(tensors(expected), tensors(actual)):
        if e.numel():
            e64, a64 = e.detach().double().cpu(), a.detach().double().cpu()
            out.append((e.dtype, float((e64 - a64).nan_to_num(0, 0, 0).abs().max()),
                        float(e64.nan_to_num(0, 0, 0).abs().max())))
    return out


def _largest(pairs: list[tuple]) -> dict:
    """Largest absolute and relative (to the largest |expected|) error over all outputs."""
    return {"max_abs": max((error for _, error, _ in pairs), default=0.0),
            "max_rel": max((error / scale if scale else error for _, error, scale in pairs),
                           default=0.0)}


def errors(expected, actual) -> dict:
    return _largest(_pair_errors(expected, actual))


def compare(expected, actual) -> dict:
    """Eager against itself: each output within its dtype's tolerance x max(1, max|expected|)
    (no reference needed)."""
    reason = structure_error(expected, actual)
    if reason:
        return {"ok": False, "reason": reason}
    pairs = _pair_errors(expected, actual)
    ok = all(error <= TOLERANCE.get(dtype, 0.0) * max(1.0, scale) for dtype, error, scale in pairs)
    return {"ok": ok, **_largest(pairs)}


def fp64_reference(original, args, kwargs):
    """The original callable's outputs in float64, or None where it cannot run that way."""
    def cast(value):
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            return value.detach().to(torch.float64)
        return value
    fn = copy.deepcopy(original).to(torch.float64) if isinstance(original, torch.nn.Module) \
        else original
    try:
        with torch.no_grad():
            torch.manual_seed(0)
            out = fn(*tree_map(cast, args), **tree_map(cast, kwargs))
    except Exception:  # e.g. float32 weights the function closes over meet float64 inputs
        return None
    floats = [t for t in tensors(out) if t.is_floating_point()]
    return out if floats and all(t.dtype == torch.float64 for t in floats) else None


def verdict(eager, compiled, reference) -> dict:
    """`same` per output pair, with the measured errors; `reference` may be None (eager)."""
    reason = structure_error(eager, compiled)
    if reason:
        return {"ok": False, "reason": reason}
    refs = tensors(reference) if reference is not None else tensors(eager)
    ok, rmse_eager, rmse_compiled, cosine = True, 0.0, 0.0, None
    for e, c, r in zip(tensors(eager), tensors(compiled), refs):
        if not e.is_floating_point():
            ok = ok and torch.equal(e, c)
            continue
        big = e.numel() >= COSINE_NUMEL
        ok = ok and same(e.detach(), c.detach(), r.detach(), cos_similarity=big,
                         tol=TOLERANCE.get(e.dtype, 1e-4), equal_nan=True, log_error=_quiet)
        if reference is not None and e.numel():
            r64 = r.detach().double()
            rmse_eager = max(rmse_eager, float(rmse(r64, e.detach().double())))
            rmse_compiled = max(rmse_compiled, float(rmse(r64, c.detach().double())))
        if big:
            similarity = torch.nn.functional.cosine_similarity(
                e.detach().flatten().double(), c.detach().flatten().double(), dim=0)
            cosine = min(cosine if cosine is not None else 1.0, float(similarity))
    result = {"ok": bool(ok), **errors(eager, compiled),
              "dtypes": [str(t.dtype).removeprefix("torch.") for t in tensors(eager)],
              "reference": "float64" if reference is not None else "eager",
              "tolerance": max((TOLERANCE.get(t.dtype, 1e-4) for t in tensors(eager)
                                if t.is_floating_point()), default=None)}
    if reference is not None:
        result["rmse_vs_float64"] = {"eager": rmse_eager, "compiled": rmse_compiled}
    if cosine is not None:
        result["cosine"] = cosine
    return result


def check(original, compiled, replay) -> dict:
    """Compiled against eager on copies of the recorded arguments; eager against itself first
    (a callable whose eager output changes from call to call is labelled not comparable)."""
    def run(fn):
        args, kwargs = replay.fresh_copies()
        torch.manual_seed(0)
        return fn(*args, **kwargs)
    first, second = run(original), run(original)
    if not compare(first, second)["ok"]:
        return {"ok": None, "reason": "not comparable: eager output changes from call to call "
                                      "(the callable changes state or draws random numbers)"}
    reference = fp64_reference(original, *replay.fresh_copies())
    return verdict(first, run(compiled), reference)

