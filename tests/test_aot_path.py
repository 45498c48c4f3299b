"""The AOT path (option `aot`) on the CPU: AOTInductor packages beside torch.compile, through the
real engine.

One job covers both ways a package arrives: the script packages its first export itself, and
with `aot` on torchbolt packages the second. Measured on this 2-core CPU (torch 2.13): the job
takes about 55 s, each package of this tiny module 21-23 s to build (g++ 12). The CUDA side is
checked on the structured-trace payloads of a real H200 build (torch 2.11), and by
tests/test_aot_gpu.py on a GPU.
"""

from __future__ import annotations

import argparse
import json
import os

import pytest

from compiler_core import Options
from compiler_core.options import add_flags, option_catalogue
from compiler_core.features.export import aoti_stages, embedded_triton
from compiler_core.runtime.aoti import choose_compiler

USER_FILE = "/job/tiny_aot.py"
FORWARD = 9  # the line of forward's body
SCRIPT = '''import torch

class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.proj(x)) * 2

model = Tiny()
x = torch.randn(2, 8)
own = torch.export.export(model, (x,))
path = torch._inductor.aoti_compile_and_package(own)
print(torch._inductor.aoti_load_package(path)(x).shape)
other = torch.export.export(model, (torch.randn(3, 8),))
'''
H200_BUILD = os.path.join(os.path.dirname(__file__), "data", "aoti_cuda_h200.json")


@pytest.fixture(scope="module")
def result(worker):
    result = worker.run(SCRIPT, Options(device="cpu", aot=True, measure=False, views=False),
                        user_file=USER_FILE)
    assert result["error"] is None, result["error"]
    assert not result["stage_errors"], result["stage_errors"]
    return result


def names(aoti) -> dict:
    return {f["path"].rsplit("/", 1)[-1].split(".", 1)[-1]: f for f in aoti["package_files"]}


def test_the_scripts_package_is_recorded_and_torchbolt_packages_the_other(result):
    own, other = result["exports"]
    assert (own["aoti"]["built_by"], own["aoti"]["line"]) == ("script", 14)
    assert (other["aoti"]["built_by"], other["aoti"]["line"]) == ("torchbolt", None)
    # the script's package is its own (torch's default path), not a second build of torchbolt's
    assert not any(f["path"].startswith("export-0/") for f in own["aoti"]["package_files"])
    assert all(f["path"].startswith("export-1/") for f in other["aoti"]["package_files"])
    assert result["stdout"].strip() == "torch.Size([2, 8])"  # the script's own load and call ran


def test_the_package_files_are_the_real_package(result):
    for entry in result["exports"]:
        files = names(entry["aoti"])
        assert {"wrapper.cpp", "kernel.cpp", "wrapper.so"} <= set(files)
        assert files["wrapper.so"]["bytes"] > 100_000  # a built shared library
        # the wrapper stage is the package's wrapper.cpp as AOTInductor logged it, before the
        # build appended its g++ compile and link commands to the file (about 2.8 KB here)
        wrapper = entry["stages"]["aoti_wrapper"]["text"]
        assert 0 < files["wrapper.cpp"]["bytes"] - len(wrapper.encode()) < 8000


def test_the_wrapper_maps_its_launches_to_user_lines(result):
    for entry in result["exports"]:
        wrapper = entry["stages"]["aoti_wrapper"]
        assert wrapper["language"] == "cpp" and "AOTInductorModel::run_impl" in wrapper["text"]
        lines = wrapper["text"].split("\n")
        launches = [i for i, line in enumerate(lines) if line.strip().startswith("cpp_fused_")
                    and "relu" in line]
        assert launches and all(wrapper["src_lines"][i] == FORWARD for i in launches)
        handle = next(i for i, line in enumerate(lines) if "[Provenance debug handles] aoti_torch"
                      in line)
        assert wrapper["src_lines"][handle] == FORWARD  # the addmm of self.proj(x)
        mapped = [n for n in wrapper["src_lines"] if n is not None]
        assert set(mapped) == {FORWARD} and len(mapped) < 20  # the launches only


def test_the_kernels_stage_maps_each_kernel_line(result):
    kernels = result["exports"][1]["stages"]["aoti_kernels"]
    lines = kernels["text"].split("\n")
    assert kernels["language"] == "cpp" and any(l.startswith('extern "C"') for l in lines)
    relu = next(i for i, line in enumerate(lines) if "clamp_min" in line)
    assert kernels["src_lines"][relu] == FORWARD
    assert kernels["kernel_src"][relu].startswith("cpp_fused_mul_relu")


def test_the_measured_numbers(result):
    for entry in result["exports"]:
        aoti = entry["aoti"]
        assert all(aoti[k] > 0 for k in ("compile_s", "load_s", "first_call_s",
                                         "jit_first_call_s"))
        # no start-up latency: the package loads and runs in less than the JIT's first call
        assert aoti["load_s"] + aoti["first_call_s"] < aoti["jit_first_call_s"] < aoti["compile_s"]
        compiler = aoti["compiler"]
        assert (compiler["chosen_by"], compiler["path"]) == ("torchbolt",
                                                             choose_compiler()["path"])
        assert aoti["configs"] == {"cpp.cxx": [compiler["path"]],
                                   "aot_inductor.precompile_headers": False}


def test_with_the_option_off_an_export_gets_no_package(worker):
    source = "import torch\nprogram = torch.export.export(torch.nn.ReLU(), (torch.randn(4),))\n"
    result = worker.run(source, Options(device="cpu", measure=False, views=False))
    (entry,) = result["exports"]
    assert "aoti" not in entry and set(entry["stages"]) == {"exported_program", "export_core_aten"}


def test_the_option_is_a_flag_and_a_checkbox():
    parser = argparse.ArgumentParser()
    add_flags(parser)
    assert parser.parse_args(["--aot"]).aot is True and parser.parse_args([]).aot is False
    (spec,) = [o for o in option_catalogue() if o["name"] == "aot"]
    assert spec["kind"] == "bool" and spec["default"] is False


def test_a_script_wrapper_is_passed_over_for_a_real_compiler(tmp_path, monkeypatch):
    wrapper = tmp_path / "g++"
    wrapper.write_text("#!/bin/sh\nexec /usr/bin/g++ \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("CXX", str(wrapper))  # as the H200 image names /opt/gcc/bin/g++
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    chosen = choose_compiler()
    assert chosen["skipped"] == [str(wrapper)]
    assert chosen["path"] and chosen["path"] != str(wrapper) and chosen["version"]


def test_a_cuda_build_shows_its_triton_kernels_and_maps_its_launches():
    """On the structured-trace payloads of a real H200 build (torch 2.11, Linear + GELU)."""
    build = json.load(open(H200_BUILD))
    assert any(path.endswith(".cubin") for path, _ in build["package_files"])
    (kernel,) = embedded_triton(build["wrapper"])
    assert kernel["name"] == "triton_poi_fused_addmm_gelu_mul_0"
    assert kernel["source"].startswith("import triton") and "@triton.jit" in kernel["source"]
    meta = {"code": {"wrapper": build["wrapper"], "kernels": build["kernels"]},
            "provenance": {"node_mappings": build["node_mappings"], "stacks": build["stacks"]},
            "kernel_lines": {}}
    stages = aoti_stages("export-0", meta, "/job/probe.py")
    kernels = stages["aoti_kernels"]
    assert kernels["language"] == "python" and kernels["text"] == kernel["source"]
    assert set(kernels["src_lines"]) == {None, 20}  # the whole kernel: forward's line
    wrapper = stages["aoti_wrapper"]
    lines = wrapper["text"].split("\n")
    launch = next(i for i, l in enumerate(lines) if l.strip().startswith("call_triton_poi"))
    assert wrapper["src_lines"][launch] == 20
    body = next(i for i, l in enumerate(lines) if l.strip().startswith("def triton_poi"))
    assert wrapper["src_lines"][body] == 20  # the kernel carried in the wrapper's comment
    assert wrapper["kernel_src"][body].startswith(f"{kernel['name']}:")  # links to its source
