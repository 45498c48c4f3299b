"""Every PyTorch setting a job runs under, set in one place (job process side).

`configure_process` holds what the zygote's warm-up compile needs already, so that the jobs it
forks inherit a warm Inductor compiled under the same settings; `configure_job` adds the rest,
once per job, before the capture hooks attach and the script runs.
"""

from __future__ import annotations

import warnings

import torch


def configure_process() -> None:
    """Before any compile in the process (the zygote's warm-up, or a bench's own process).

    - `compile_threads = 1`: no compile-worker pool, which a fork of the zygote would orphan;
    - `force_disable_caches`: every compile does the full work, so no cache hides a stage."""
    import torch._inductor.config as inductor_config
    inductor_config.compile_threads = 1
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


def configure_job(device: str) -> None:
    """Settings for one job on `device`, before the script runs: `configure_process`'s
    (idempotent: the zygote set them before its fork), capture's and the timings'; default
    device "cuda" on a GPU job, so the script's tensors land there as it expects; and the
    warning Dynamo gives for torchbolt's disabled caches stays out of the user's stderr."""
    configure_process()
    configure_capture()
    configure_measure(device)
    if device == "cuda":
        torch.set_default_device("cuda")
    warnings.filterwarnings("ignore", message="dynamo_pgo force disabled")
