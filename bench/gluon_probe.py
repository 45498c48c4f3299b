"""Where a Gluon kernel's `glir` stage exists: `python bench/gluon_probe.py OUT.json`.

Triton compiles a `@gluon.jit` kernel from `glir` (its Gluon IR) down to TTGIR, LLIR, PTX and a
cubin, and its cache then holds `NAME.glir`; torchbolt shows the stages of the Triton kernels
Inductor generated (`runtime/gpu/triton_kernels.py`). This probe writes what the machine's
torch and Triton do with a user's Gluon kernel:
- `eager`: launched on its own (no torch.compile): the suffixes of its cache folder;
- `compiled`: launched inside a `torch.compile`d function, as a user's `@triton.jit` kernel is
  (Inductor copies such a kernel into its output module): the error, or the suffixes of every
  kernel folder Inductor's compile left, and whether the output module carries the kernel;
- `virtual`: compiled on no GPU for `sm_90` through `GluonASTSource` (Triton 3.9 documents this),
  the suffixes of its folder;
- `as_triton_jit`: its source compiled under `@triton.jit`, which is how Inductor writes a user's
  kernel into its output module (torch/_inductor/codegen/wrapper.py, torch 2.15); Dynamo takes
  any `JITFunction` for a user Triton kernel, and `GluonJITFunction` is one.
The CPU machine runs `virtual` and `as_triton_jit` (bench/results/gluon_probe_cpu.json); a GPU
machine all four.
"""

from __future__ import annotations

import glob
import importlib.metadata
import json
import os
import sys
import tempfile
import traceback

CACHE = tempfile.mkdtemp(prefix="gluon-probe-")
os.environ["TRITON_CACHE_DIR"] = os.path.join(CACHE, "triton")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(CACHE, "inductor")

import torch  # noqa: E402  (after the cache folders are set)


def suffixes(name: str) -> dict[str, list[str]]:
    """Cache folder -> the file suffixes of NAME in it, under the probe's cache."""
    found: dict[str, list[str]] = {}
    for path in glob.glob(os.path.join(CACHE, "**", f"{name}.*"), recursive=True):
        found.setdefault(os.path.relpath(os.path.dirname(path), CACHE), []).append(
            path.rsplit(".", 1)[1])
    return {folder: sorted(found[folder]) for folder in sorted(found)}


def failure(exc: BaseException) -> dict:
    return {"error": type(exc).__name__, "message": str(exc)[:1500],
            "where": traceback.format_exc()[-1500:]}


def main(out_path: str) -> None:
    report: dict = {"torch": torch.__version__, "cuda": torch.cuda.is_available(),
                    "triton": importlib.metadata.version("triton")}
    try:
        from triton.experimental import gluon
        from triton.experimental.gluon import language as gl
    except ImportError as exc:
        report["gluon"] = failure(exc)
        return _write(out_path, report)

    @gluon.jit
    def gluon_add(x_ptr, y_ptr, out_ptr, n, BLOCK: gl.constexpr):
        layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
        offsets = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
        mask = offsets < n
        gl.store(out_ptr + offsets, gl.load(x_ptr + offsets, mask=mask)
                 + gl.load(y_ptr + offsets, mask=mask), mask=mask)

    report["gluon"] = {"class": type(gluon_add).__name__}
    if torch.cuda.is_available():
        x, y = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")
        try:
            out = torch.empty_like(x)
            gluon_add[(4,)](x, y, out, 1000, BLOCK=256, num_warps=4)
            report["eager"] = {"correct": bool(torch.allclose(out, x + y)),
                               "files": suffixes("gluon_add")}
        except Exception as exc:
            report["eager"] = failure(exc)

        def add(a, b):
            result = torch.empty_like(a)
            gluon_add[(4,)](a, b, result, a.numel(), BLOCK=256, num_warps=4)
            return result * 2

        before = set(suffixes("gluon_add"))
        try:
            got = torch.compile(add, fullgraph=True)(x, y)
            modules = glob.glob(os.path.join(CACHE, "inductor", "**", "*.py"), recursive=True)
            texts = [open(p, encoding="utf-8").read() for p in modules]
            report["compiled"] = {
                "correct": bool(torch.allclose(got, (x + y) * 2)),
                "new_folders": {k: v for k, v in suffixes("gluon_add").items()
                                if k not in before},
                "module_has_kernel": any("def gluon_add" in t for t in texts),
                "module_decorators": sorted({line.strip() for t in texts for line in
                                             t.splitlines() if line.strip().startswith("@")
                                             and ("jit" in line)})}
        except Exception as exc:
            report["compiled"] = failure(exc)
    import triton
    from triton.backends.compiler import GPUTarget
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
                 "BLOCK": "constexpr"}
    target = GPUTarget("cuda", 90, 32)
    # In a cache of its own: Triton 3.9 keys both compiles alike, so after the Gluon one this
    # would load the Gluon binary.
    os.environ["TRITON_CACHE_DIR"] = os.path.join(CACHE, "as_triton_jit")
    try:
        source = triton.compiler.ASTSource(triton.jit(gluon_add.fn), signature,
                                           constexprs={"BLOCK": 256})
        report["as_triton_jit"] = {"hash": triton.compile(source, target=target).hash}
    except Exception as exc:
        report["as_triton_jit"] = failure(exc)
    os.environ["TRITON_CACHE_DIR"] = os.path.join(CACHE, "triton")
    try:
        from triton.experimental.gluon._runtime import GluonASTSource
        source = GluonASTSource(gluon_add, signature, constexprs={"BLOCK": 256})
        binary = triton.compile(source, target=target)
        report["virtual"] = {"hash": binary.hash, "files": suffixes("gluon_add")}
    except Exception as exc:
        report["virtual"] = failure(exc)
    _write(out_path, report)


def _write(out_path: str, report: dict) -> None:
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
