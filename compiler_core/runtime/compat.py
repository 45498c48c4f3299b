"""Where the PyTorch internals torchbolt relies on differ between the torch versions it supports
(2.11-2.14): one function per seam, each saying which version differs and how, so the rest of
runtime/ never branches on a version itself (README, "Adding a torch version").

Checked between 2.13.0 and 2.14.1 (`scripts/test.sh` runs the engine tests in both): every other
private import, patched method and config key that runtime/ uses exists in both with the same
signature; what else differs there is PyTorch's output, shown as it is (the gallery's "Same code,
two torch versions").
"""

from __future__ import annotations

import torch


def cuda_properties_seams(properties) -> list[tuple[object, str, object]]:
    """(owner, attribute or key, value): what to patch so that Inductor takes `properties` for
    CUDA device 0's on a machine without one (the GPU preview's virtual H200). Every version
    reads `torch.cuda.get_device_properties`. torch 2.14 also reads the fork-safe cache behind
    `CudaInterface.Worker` (`caching_worker_device_properties["cuda"]`, a list by device index):
    its `is_triton_capable` and `raise_if_triton_unavailable` name `CudaInterface.Worker`
    directly, so a subclass's own Worker is never asked; 2.11-2.13 did not read it there."""
    from torch._dynamo import device_interface
    return [(torch.cuda, "get_device_properties", lambda device=None: properties),
            (device_interface.caching_worker_device_properties, "cuda", [properties])]


def build_algorithm_selector_cache() -> None:
    """Build Inductor's algorithm-selector cache now (in the zygote's warm-up): each job's
    autotuning hook (`why_gpu.record_autotune_choices`) adds to it, and building it hashes
    Triton's files (`triton_key`): a CPU server job's first stage came at 0.62 s instead of
    0.20 s on this 2-core machine. torch 2.13 and 2.14 have the getter; where a torch lacks
    it, each job builds the cache itself."""
    from torch._inductor import select_algorithm
    getter = getattr(select_algorithm, "get_algorithm_selector_cache", None)
    if getter is not None:
        getter()
