"""GPU preview: the Triton kernels Inductor would generate for an H200, on a machine without a GPU.

How, after the script ran on CPU: each Dynamo graph the backend received is compiled again by
Inductor's own `compile_fx`, with its inputs as fake CUDA tensors (`FakeTensorMode`: shapes, no
memory) and a virtual CUDA device that answers Inductor's questions with an H200's properties
(`VIRTUAL_H200`, read off a real H200 with torch 2.11). Inductor's output module is taken when it
is written (`GraphLowering.save_output_code`), before anything would load it on a device. Each
Triton kernel's first config is then compiled by Triton for `sm_90` into the job's Triton cache
(`CachingAutotuner.precompile(warm_cache_only=True)`, Inductor's own path for compile workers,
which compiles without loading), from where `triton_kernels` reads TTIR, TTGIR, LLIR, PTX and SASS.

What it cannot show, said in each preview's notes: the backward (autograd on fake CUDA tensors
needs a CUDA build: the graph is compiled as under `torch.no_grad`), the config that run-time
autotuning would pick (the first candidate is shown), `max-autotune` template choices, and
registers measured by a loaded kernel (cuobjdump's static count is shown instead).
"""

from __future__ import annotations

import contextlib
import logging
import types

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from ...features.kernels import parse_kernels
from ..session import CaptureSession
from ..compat import cuda_properties_seams
from .triton_kernels import cache_index, kernel_record

# torch.cuda.get_device_properties(0) of the H200 the bench ran on (torch 2.11, driver 580.159.04),
# see bench/results/gpu_timing.json.
VIRTUAL_H200 = types.SimpleNamespace(
    name="NVIDIA H200", major=9, minor=0, multi_processor_count=132, warp_size=32,
    regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048,
    max_threads_per_block=1024, total_memory=150_109_880_320, L2_cache_size=62_914_560,
    shared_memory_per_block=49152, shared_memory_per_block_optin=232448,
    shared_memory_per_multiprocessor=233472, gcnArchName="NVIDIA H200", is_integrated=0,
    is_multi_gpu_board=0, uuid="virtual-h200", clock_rate=1_980_000,
    memory_clock_rate=3_201_000, memory_bus_width=6016)
TARGET = "NVIDIA H200 (virtual, sm_90)"


class _Generated(Exception):
    """Raised from Inductor's save-output-code hook: the code is taken, nothing is loaded."""


def _virtual_interface():
    from torch._dynamo.device_interface import CudaInterface

    def properties(device=None):
        return VIRTUAL_H200

    class VirtualCuda(CudaInterface):
        class Worker(CudaInterface.Worker):
            get_device_properties = staticmethod(properties)
            current_device = staticmethod(lambda: 0)
            set_device = staticmethod(lambda device: None)

        get_device_properties = staticmethod(properties)
        get_compute_capability = staticmethod(lambda device=None: 90)
        current_device = staticmethod(lambda: 0)
        device_count = staticmethod(lambda: 1)
        is_available = staticmethod(lambda: True)
        is_bf16_supported = staticmethod(lambda including_emulation=False: True)
        synchronize = staticmethod(lambda device=None: None)

    return VirtualCuda


class _VirtualDriver:
    """The Triton driver Inductor asks for the current target while it generates code."""

    def __init__(self, interface):
        self.interface = interface

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget
        return GPUTarget("cuda", 90, 32)

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_active_torch_device(self):
        return torch.device("cuda", 0)

    def get_device_interface(self):
        return self.interface


def _patch(stack: contextlib.ExitStack, owner, name: str, value) -> None:
    """Set owner.name (an attribute, or a key of a dict) for the duration of the stack."""
    if isinstance(owner, dict):  # a key it lacked is removed again, not left as None
        stack.callback(*(owner.__setitem__, name, owner[name]) if name in owner
                       else (owner.pop, name, None))
        owner[name] = value
    else:
        old = getattr(owner, name)
        setattr(owner, name, value)
        stack.callback(setattr, owner, name, old)


def _clear_device_caches() -> None:
    """Inductor caches what it learnt about devices (no usable GPU here); forget it."""
    from torch._inductor.runtime.hints import DeviceProperties
    from torch.utils._triton import has_triton
    has_triton.cache_clear()
    DeviceProperties.create.cache_clear()


def kernel_provenance() -> dict:
    """Inductor's provenance of the kernels of the graph being compiled: kernel -> post-grad
    nodes and kernel -> stack traces, keyed `NAME:N` (what the provenance artifacts of a recorded
    compile carry; the preview's compile records no trace)."""
    from torch._inductor import debug
    return {"node_mappings": {"cppCodeToPost": dict(
                debug._inductor_triton_kernel_to_post_grad_node_info)},
            "stacks": dict(debug._inductor_kernel_stack_trace)}


@contextlib.contextmanager
def virtual_h200(saved: list[dict]):
    """Inductor generates CUDA code for a virtual H200; each output module goes to `saved` as
    `{"code", "provenance"}` (its `kernel_provenance()`)."""
    from torch._dynamo import device_interface
    from torch._inductor.fx_passes import misc_patterns
    from torch._inductor.graph import GraphLowering
    from torch._inductor.runtime import triton_helpers
    from triton.runtime.driver import driver

    def save_output_code(code: str) -> None:
        saved.append({"code": code, "provenance": kernel_provenance()})
        raise _Generated()

    interface = _virtual_interface()
    init_misc = misc_patterns._misc_patterns_init
    device_interface.get_interface_for_device("cpu")  # registers the built-in interfaces first
    with contextlib.ExitStack() as stack:
        stack.callback(_clear_device_caches)
        _patch(stack, device_interface.device_interfaces, "cuda", interface)
        _patch(stack, driver, "_active", _VirtualDriver(interface))
        for owner, name, value in cuda_properties_seams(VIRTUAL_H200):
            _patch(stack, owner, name, value)
        _patch(stack, torch.cuda, "get_device_capability", lambda device=None: (9, 0))
        _patch(stack, torch.cuda, "current_device", lambda: 0)
        _patch(stack, triton_helpers, "set_driver_to_gpu", lambda: None)
        _patch(stack, GraphLowering, "save_output_code", save_output_code)
        # Stopping the compile makes Inductor warn that it kept its temporary cache folder.
        _patch(stack, logging.getLogger("torch._inductor.utils"), "disabled", True)
        # These replacement patterns are device-independent, but tracing them with example
        # tensors on "cuda" fails in a CPU-only build (torch 2.13): trace them on the CPU.
        _patch(stack, misc_patterns, "_misc_patterns_init", lambda device=None: init_misc("cpu"))
        _clear_device_caches()
        yield


def _fake_cuda(value, mode: FakeTensorMode):
    if isinstance(value, torch.Tensor):
        with mode:
            return torch.empty_strided(value.size(), value.stride(), dtype=value.dtype,
                                       device="cuda")
    if isinstance(value, torch.device) and value.type == "cpu":
        return torch.device("cuda", 0)
    return value


def cuda_graph(gm, example_inputs, mode: FakeTensorMode):
    """A copy of a Dynamo graph whose inputs, constants and device arguments are on CUDA."""
    from torch.fx.node import map_aggregate
    gm = torch.fx.GraphModule(gm, gm.graph.__deepcopy__())
    on_cuda = lambda a: _fake_cuda(a, mode) if isinstance(a, torch.device) else a  # noqa: E731
    for node in gm.graph.nodes:
        node.args, node.kwargs = map_aggregate(node.args, on_cuda), map_aggregate(node.kwargs,
                                                                                  on_cuda)
        if node.op == "get_attr":
            owner, _, name = node.target.rpartition(".")
            module = gm.get_submodule(owner)
            value = getattr(module, name)
            if isinstance(value, torch.Tensor):
                module._parameters.pop(name, None)
                module._buffers.pop(name, None)
                setattr(module, name, _fake_cuda(value.detach(), mode))
    gm.recompile()
    return gm, [_fake_cuda(x, mode) for x in example_inputs]


def generate(gm, example_inputs, saved: list[dict]) -> None:
    """Inductor's CUDA output modules for one Dynamo graph (inference) into `saved`; call it
    inside `virtual_h200(saved)`."""
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner

    def codegen_only(graph, inputs, **kwargs):
        try:
            compile_fx_inner(graph, inputs, **kwargs)
        except Exception:
            if not saved:
                raise
        return lambda args: None  # never run: the preview only generates

    graph, inputs = cuda_graph(gm, example_inputs, FakeTensorMode())
    compile_fx(graph, inputs, inner_compile=codegen_only)


def compile_kernel(name: str, source: str) -> dict:
    """Compile a Triton kernel's first config for sm_90 into the job's Triton cache."""
    from torch._inductor.codecache import PyCodeCache

    autotuner = getattr(PyCodeCache.load(source), name)
    candidates, config = len(autotuner.configs), autotuner.configs[0]
    autotuner.configs = [config]
    autotuner.precompile(warm_cache_only=True)
    folder = cache_index().get(autotuner.compile_results[0].kernel.hash)
    return kernel_record(autotuner, config, folder, {"candidates": candidates})


def preview_graph(gm, example_inputs, session: CaptureSession) -> dict:
    """The preview of one graph: output code, kernels with their stages and the owners of their
    lines (`runtime.line_owners`), Inductor's provenance of them, and notes."""
    saved: list = []
    notes, kernels = [], []
    if any(isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs):
        notes.append("Compiled as under torch.no_grad (forward only): a CPU-only PyTorch cannot "
                     "run autograd on CUDA tensors, even fake ones, so the backward is not shown.")
    with virtual_h200(saved), torch.no_grad():
        generate(gm, example_inputs, saved)
        codes = [module["code"] for module in saved]
        owners = session.line_owners.take(session.user_file)
        for kernel in (k for code in codes for k in parse_kernels(code) if k["kind"] == "triton"):
            record = compile_kernel(kernel["name"], kernel["source"])
            kernels.append({**record, "source": kernel["source"],
                            "owners": owners.get(kernel["name"], {})})
            candidates = record["launch"]["candidates"]
            if candidates > 1:
                notes.append(f"{kernel['name']}: {candidates} candidate configs; on a GPU "
                             "Inductor benchmarks them at the first call and keeps the fastest; "
                             "the first is shown.")
    return {"device": TARGET, "output_code": "\n\n".join(codes), "kernels": kernels,
            "provenance": saved[0]["provenance"] if saved else {}, "notes": notes}


def preview(session: CaptureSession) -> None:
    """One `gpu_preview` record per Dynamo graph of the job's `CaptureSession` (or a
    `stage_error`)."""
    for compile_id, gm, example_inputs in session.graphs:
        try:
            with session.paused():
                result = preview_graph(gm, example_inputs, session)
        except Exception as exc:  # one graph's preview failing costs that preview only
            session.writer.emit("stage_error", compile_id, None, stage="gpu_preview",
                                message=f"{type(exc).__name__}: {str(exc)[:2000]}")
            continue
        session.writer.emit("gpu_preview", compile_id, None, **result)
