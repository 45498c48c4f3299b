"""Every PyTorch setting a job runs under, set in one place (job process side).

`configure_process` holds what the zygote's warm-up compile needs already, so that the jobs it
forks inherit a warm Inductor compiled under the same settings; `configure_job` adds the rest,
once per job, before the capture hooks attach and the script runs.
"""

from __future__ import annotations

import os
import re
import warnings

import torch


def configure_process() -> None:
    """Before any compile in the process (the zygote's warm-up, or a bench's own process).

    - `compile_threads = 1`: no compile-worker pool, which a fork of the zygote would orphan;
    - `force_disable_caches`: every compile does the full work, so no cache hides a stage;
      or, with a build cache of one trusted user's (`TORCHBOLT_BUILD_CACHE`, the CLI's), only
      the caches that skip code generation off (FX graph, AOTAutograd, autotuning results,
      Dynamo's profile-guided dynamic shapes): every stage is still generated, and a kernel
      built before from the same source is reused (a graph-break script: 8.8 s instead of
      21.3 s for plain Python on this 2-core machine, 7.8 s with every cache on)."""
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config
    inductor_config.compile_threads = 1
    if os.environ.get("TORCHBOLT_BUILD_CACHE"):
        inductor_config.fx_graph_cache = False
        inductor_config.autotune_local_cache = False
        functorch_config.enable_autograd_cache = False
        torch._dynamo.config.automatic_dynamic_local_pgo = False
    else:
        inductor_config.force_disable_caches = True


def configure_capture() -> None:
    """What capture needs: `trace.provenance_tracking_level = 1`, Inductor's provenance
    artifacts, which map each kernel to the FX nodes and user lines it came from (kernels)."""
    import torch._inductor.config as inductor_config
    inductor_config.trace.provenance_tracking_level = 1


def configure_measure(device: str) -> None:
    """What the timings need on `device` ("cpu" or "cuda"):

    - `cpp.enable_kernel_profile` (CPU): each C++ kernel gets a RECORD_FUNCTION, so that the
      profiler can time it (per-kernel timings);
    - `benchmark_combo_kernel` (GPU figures): each Triton kernel's inductor_meta gets Inductor's
      byte and FLOP estimates (`kernel_num_gb`, `kernel_flop`) for GB/s and TFLOP/s; with combo
      kernels off (the default) that is all it changes, while `benchmark_kernel` would also add
      a harness to every kernel module and print each module's path to stderr."""
    import torch._inductor.config as inductor_config
    inductor_config.cpp.enable_kernel_profile = device == "cpu"
    inductor_config.benchmark_combo_kernel = True


# A script that names a device places its own tensors; one that names none gets the GPU as
# torch's default device. That default is a TorchFunctionMode on every torch call: on the H200
# it made a small GPT-2's eager call 1.42x slower (do_bench median 3.89 -> 5.50 ms).
NAMES_A_DEVICE = re.compile(r"\bcuda\b|\bdevice\b")


def configure_job(device: str, source: str, measure: bool) -> str | None:
    """Settings for one job on `device`, before the script runs: `configure_process`'s
    (idempotent: the zygote set them before its fork) but, on the CPU, a compile-worker pool
    of the job's own, capture's and (with `measure`) the timings'; the default
    device "cuda" on a GPU job whose script names no device; and the warning Dynamo gives for
    torchbolt's disabled caches stays out of the user's stderr. Returns a note for the user
    when torchbolt changed the default device."""
    configure_process()
    import torch._inductor.config as inductor_config
    if device == "cpu":
        # The job's own compile-worker pool, as a plain script gets (2 on this 2-core machine: a
        # 2-layer transformer's fw+bw took 37 s with it, 46 s with one thread). The zygote has
        # none. Not on a GPU: on the H200 (16 cores) a ResNet-18 compiled in 12.2-12.3 s with 16
        # workers and 12.8-16.8 s with one, and the pool's fresh interpreters would start during
        # the job, its timings included.
        inductor_config.compile_threads = inductor_config.decide_compile_threads()
    configure_capture()
    if measure:  # else the generated code stays as a plain script gets it
        configure_measure(device)
    warnings.filterwarnings("ignore", message="dynamo_pgo force disabled")
    if device == "cuda" and not NAMES_A_DEVICE.search(source):
        torch.set_default_device("cuda")
        return ("The script names no device, so torchbolt made the GPU torch's default device "
                "(torch.set_default_device('cuda')). That default intercepts every torch call "
                "and its cost is in the timings; pass device='cuda' to avoid it.")
    return None
