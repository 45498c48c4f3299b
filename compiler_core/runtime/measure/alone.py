"""Each Triton kernel timed alone, the way `triton.testing.do_bench` times a kernel: its first
launch of a call captured (its autotuner and arguments), then launched again and again, each
launch between its own pair of CUDA events and after an L2 flush, median. This is the figure
to compare with do_bench; inside the real call a kernel may find in L2 what the kernel before
it wrote, which the profiler's in-call rows show."""

from __future__ import annotations

import statistics

import torch

LAUNCHES = 100


def capture_launches(call) -> dict[str, tuple]:
    """The first launch of each Triton kernel during one `call()`: (autotuner, args, kwargs)."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    seen: dict[str, tuple] = {}
    original = CachingAutotuner.run

    def run(self, *args, **kwargs):
        seen.setdefault(self.fn.__name__, (self, args, kwargs))
        return original(self, *args, **kwargs)

    CachingAutotuner.run = run
    try:
        call()
    finally:
        CachingAutotuner.run = original
    return seen


def argument_bytes(launches: dict[str, tuple]) -> dict[str, int]:
    """Bytes of each kernel's tensor arguments at its captured launch."""
    return {name: sum(a.numel() * a.element_size() for a in args if isinstance(a, torch.Tensor))
            for name, (_, args, _) in launches.items()}


def time_alone(launches: dict[str, tuple], clock, flush) -> dict[str, float]:
    """Median microseconds of each captured kernel launched alone, L2 flushed before each."""
    out = {}
    for name, (autotuner, args, kwargs) in launches.items():
        def launch(autotuner=autotuner, args=args, kwargs=kwargs):
            autotuner.run(*args, **kwargs)
        launch()
        out[name] = 1e3 * statistics.median(clock.per_call(launch, LAUNCHES, before=flush))
    return out
