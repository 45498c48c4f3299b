"""Triton lowering stages without a GPU: Triton compiles for a named target (sm_90) on the CPU,
the job's cache folders are read back, and the GPU preview compiles Inductor's CUDA kernels for a
virtual H200 through the real engine."""

from __future__ import annotations

import os

import pytest

from compiler_core import Options
from compiler_core.report.result import build_result
from compiler_core.runtime.gpu.triton_kernels import cache_index, read_folder

SCRIPT = '''
import torch

def softmax_scale(x):
    return torch.softmax(x * 0.125, dim=-1) + torch.arange(x.shape[-1], device=x.device)

mlp = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU())
torch.compile(softmax_scale)(torch.randn(64, 512))
torch.compile(mlp)(torch.randn(8, 64)).sum().backward()
'''


def compile_for_sm90(cache_dir: str):
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget

    @triton.jit
    def add_one(x, out, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + offsets, tl.load(x + offsets, mask=offsets < n) + 1, mask=offsets < n)

    source = triton.compiler.ASTSource(
        fn=add_one, signature={"x": "*fp32", "out": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        constexprs={"BLOCK": 1024})
    os.environ["TRITON_CACHE_DIR"] = cache_dir
    try:
        return triton.compile(source, target=GPUTarget("cuda", 90, 32))
    finally:
        del os.environ["TRITON_CACHE_DIR"]


def test_every_stage_of_a_kernel_compiled_for_sm90_on_cpu(tmp_path, monkeypatch):
    binary = compile_for_sm90(str(tmp_path))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    folder = cache_index()[binary.hash]
    info = read_folder(folder, "add_one")
    stages = info["stages"]
    assert "tt.func public @add_one" in stages["ttir"]
    assert "ttg.num-warps" in stages["ttgir"]
    assert "define" in stages["llir"] and "@add_one" in stages["llir"]
    assert ".target sm_90a" in stages["ptx"]
    sass = stages["sass"].splitlines()
    assert ".text.add_one:" in sass and "/*0000*/" in sass[sass.index(".text.add_one:") + 1]
    assert "//##" not in stages["sass"] and "/* 0x" not in stages["sass"]
    assert len(info["sass_lines"]) == len(sass) and set(info["sass_lines"]) > {None}
    assert info["metadata"]["target"] == {"backend": "cuda", "arch": 90, "warp_size": 32}
    assert info["resources"]["regs"] > 0 and info["resources"]["local"] == 0


def kernel_record(name="triton_poi_fused_add_0", backward=False):
    stages = {s: f"{s} text of {name}" for s in ("ttir", "ttgir", "llir", "ptx", "sass")}
    return {"name": "triton_kernel", "compile_id": "0/0", "t": 0, "payload": None, "meta": {
        "name": name, "is_backward": backward, "stages": stages, "num_gb": 0.5, "flop": None,
        "launch": {"config": {"XBLOCK": 1024, "num_warps": 4, "num_stages": 1},
                   "grid": ["-(xnumel // -1024)", "1", "1"], "registers": 18, "spills": 0}}}


def test_stages_have_one_section_per_kernel_and_kernels_their_launch():
    code = ("triton_poi_fused_add_0 = async_compile.triton('triton_poi_fused_add_0', '''\n"
            "@triton.jit\ndef triton_poi_fused_add_0(): pass\n''', device_str='cuda')\n")
    records = [{"name": "inductor_output_code", "compile_id": "0/0", "t": 0, "meta": {},
                "payload": "# AOT ID: ['0_inference']\n" + code},
               kernel_record(), kernel_record("triton_red_fused_sum_1"),
               {"name": "triton_autotune", "compile_id": "0/0", "t": 0, "payload": None,
                "meta": {"name": "triton_poi_fused_add_0", "is_backward": False,
                         "configs": [{"config": {"XBLOCK": 1024}, "ms": 0.1}]}}]
    compile_ = build_result(records, "/x.py", strict=True)["compiles"][0]
    ptx = compile_["stages"]["triton_ptx"]
    assert [s["label"] for s in ptx["sections"]] == ["triton_poi_fused_add_0",
                                                     "triton_red_fused_sum_1"]
    assert ptx["language"] == "ptx" and ptx["preview"] is None
    assert "ptx text of triton_red_fused_sum_1" in ptx["text"]
    (kernel,) = compile_["kernels"]
    assert kernel["launch"]["registers"] == 18 and kernel["num_gb"] == 0.5
    assert kernel["autotune"][0]["ms"] == 0.1
    assert compile_["gpu_preview"] is None and compile_["autotuning"] == []


@pytest.fixture(scope="module")
def preview_result(worker, tmp_path_factory):
    """A CPU job with the GPU preview on."""
    path = tmp_path_factory.mktemp("preview") / "preview_script.py"
    path.write_text(SCRIPT)
    return worker.run(SCRIPT, Options(device="cpu", gpu_preview=True), user_file=str(path))


def test_preview_compiles_inductors_cuda_kernels_for_a_virtual_h200(preview_result):
    assert preview_result["error"] is None and not preview_result["stage_errors"], preview_result["notes"]
    softmax, mlp = (c for c in preview_result["compiles"] if c["has_graph"])
    preview = softmax["gpu_preview"]
    assert preview["device"] == "NVIDIA H200 (virtual, sm_90)"
    assert "triton_heuristics" in preview["output_code"] and "cpp_fused" not in \
        preview["output_code"]
    (kernel,) = preview["kernels"]
    assert kernel["name"].startswith("triton_per_fused") or kernel["name"].startswith(
        "triton_red_fused")
    assert "@triton.jit" in kernel["source"] and "tl.arange" in kernel["source"]
    launch = kernel["launch"]
    assert launch["target"]["arch"] == 90 and launch["config"]["num_warps"] >= 1
    assert launch["registers"] > 0 and kernel["num_gb"] > 0
    for stage in ("triton_ttir", "triton_ttgir", "triton_llir", "triton_ptx", "triton_sass"):
        artifact = softmax["stages"][stage]
        assert artifact["preview"] == preview["device"] and "preview" in artifact["title"]
        assert artifact["sections"][0]["label"] == kernel["name"]
    # The CPU job itself still ran C++ kernels; the preview sits beside them.
    assert {k["kind"] for k in softmax["kernels"]} == {"cpp"}
    # Autograd cannot run on CUDA tensors in a CPU-only build: forward only, and said so.
    assert "forward only" in mlp["gpu_preview"]["notes"][0]
    assert any(k["name"].startswith("triton_poi_fused") for k in mlp["gpu_preview"]["kernels"])


def test_loaded_autotuners_survives_dead_weak_proxies():
    import gc
    import weakref

    from compiler_core.runtime.gpu.triton_kernels import loaded_autotuners

    class Thing:
        pass

    thing = Thing()
    holder = [weakref.proxy(thing)]  # noqa: F841  (kept alive, tracked by gc)
    del thing
    gc.collect()
    assert isinstance(list(loaded_autotuners()), list)
