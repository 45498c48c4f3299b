"""Triton 3.9's `glir` stage (issue 43): a Gluon kernel (`@gluon.jit`) compiled for sm_90 on the
CPU leaves its Gluon IR, `NAME.glir`, in Triton's cache, and no `.ttir`. torchbolt reads it and
shows `triton_glir` for that kernel alone; a kernel Triton wrote no Gluon IR for adds nothing to
it, and Triton 3.8 (the second torch's) writes none: its Gluon kernels start at TTGIR."""

from __future__ import annotations

import os

import pytest

from compiler_core.report.result import build_result
from compiler_core.runtime.gpu.triton_kernels import cache_index, read_folder
from test_triton_ir import kernel_record

pytest.importorskip("triton.experimental.gluon")


def compile_gluon_for_sm90(cache_dir: str):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon._runtime import GluonASTSource

    @gluon.jit
    def gluon_add_one(x, out, n, BLOCK: gl.constexpr):
        layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
        offsets = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
        gl.store(out + offsets, gl.load(x + offsets, mask=offsets < n) + 1, mask=offsets < n)

    source = GluonASTSource(gluon_add_one, {"x": "*fp32", "out": "*fp32", "n": "i32",
                                            "BLOCK": "constexpr"}, constexprs={"BLOCK": 1024})
    os.environ["TRITON_CACHE_DIR"] = cache_dir
    try:
        return triton.compile(source, target=GPUTarget("cuda", 90, 32)), source.ext == "glir"
    finally:
        del os.environ["TRITON_CACHE_DIR"]


@pytest.fixture(scope="module")
def gluon_kernel(tmp_path_factory):
    """The Gluon kernel's stages as torchbolt reads them from the cache, and whether this
    Triton writes Gluon IR."""
    folder = str(tmp_path_factory.mktemp("gluon_cache"))
    binary, writes_glir = compile_gluon_for_sm90(folder)
    saved = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = folder
    try:
        stages = read_folder(cache_index()[binary.hash], "gluon_add_one")["stages"]
    finally:
        os.environ.pop("TRITON_CACHE_DIR")
        if saved is not None:
            os.environ["TRITON_CACHE_DIR"] = saved
    written = {name.rsplit(".", 1)[1] for _, _, names in os.walk(folder) for name in names
               if name.startswith("gluon_add_one.")}
    return stages, writes_glir, written


def test_the_gluon_ir_is_read_where_triton_wrote_it(gluon_kernel):
    stages, writes_glir, written = gluon_kernel
    assert ("glir" in written) == writes_glir
    assert "ttir" not in written and "ttir" not in stages  # Gluon skips TTIR
    assert ("glir" in stages) == writes_glir
    if writes_glir:
        assert "@gluon_add_one" in stages["glir"] and "#ttg.blocked" in stages["glir"]
    assert {"ttgir", "llir", "ptx"} <= set(stages)


def test_glir_is_a_stage_of_the_gluon_kernel_only(gluon_kernel):
    stages, writes_glir, _ = gluon_kernel
    gluon = kernel_record("gluon_add_one")
    gluon["meta"]["stages"] = stages
    [compiled] = build_result([kernel_record(), gluon], "/x.py", strict=True)["compiles"]
    assert ("triton_glir" in compiled["stages"]) == writes_glir
    if writes_glir:
        glir = compiled["stages"]["triton_glir"]
        assert [s["label"] for s in glir["sections"]] == ["gluon_add_one"]
        assert glir["text"] == stages["glir"] and glir["language"] == "mlir"
    ttir = compiled["stages"]["triton_ttir"]
    assert [s["label"] for s in ttir["sections"]] == ["triton_poi_fused_add_0"]
    [only_triton] = build_result([kernel_record()], "/x.py", strict=True)["compiles"]
    assert "triton_glir" not in only_triton["stages"]
