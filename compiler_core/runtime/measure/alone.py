"""Each Triton kernel timed alone, the way `triton.testing.do_bench` times a kernel: its first
launch of a call captured (its autotuner and arguments), then launched again and again, each
launch between its own pair of CUDA events and after an L2 flush (and, for a kernel that changes
its arguments in place, after they are restored), median. This is the figure
to compare with do_bench; inside the real call a kernel may find in L2 what the kernel before
it wrote, which the profiler's in-call rows show."""

from __future__ import annotations

import statistics
from itertools import zip_longest
from typing import NamedTuple

import torch

LAUNCHES = 100


class Launch(NamedTuple):
    """A kernel's launch as the call made it, and copies of the arguments it changes in place,
    taken before it ran (Inductor's own `clone_args`, as its autotuner benchmarks)."""
    autotuner: object
    args: tuple
    kwargs: dict
    saved: tuple[list, dict]

    def mutated(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """(live argument, its saved copy) for each argument the kernel changes."""
        saved_args, saved_kwargs = self.saved
        pairs = list(zip(self.args, saved_args)) + [
            (self.kwargs[name], copy) for name, copy in saved_kwargs.items()]
        return [(live, copy) for live, copy in pairs
                if isinstance(live, torch.Tensor) and copy is not live]


def capture_launches(call) -> dict[str, Launch]:
    """The first launch of each Triton kernel during one `call()`."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    seen: dict[str, Launch] = {}
    original = CachingAutotuner.run

    def run(self, *args, **kwargs):
        if self.fn.__name__ not in seen:
            seen[self.fn.__name__] = Launch(self, args, kwargs, self.clone_args(*args, **kwargs))
        return original(self, *args, **kwargs)

    CachingAutotuner.run = run
    try:
        call()
    finally:
        CachingAutotuner.run = original
    return seen


def moved_bytes(launch: Launch) -> int:
    """Bytes a kernel reads and writes at its captured launch, from its tensor arguments: once
    each, twice for an `in_out_ptr` (Inductor's name for a buffer the kernel reads and writes in
    place, e.g. a matmul's bias+GELU epilogue on the matmul's output)."""
    return sum(arg.numel() * arg.element_size() * (2 if param.startswith("in_out_ptr") else 1)
               for arg, param in zip_longest(launch.args, parameter_names(launch), fillvalue="")
               if isinstance(arg, torch.Tensor))


def parameter_names(launch: Launch) -> list[str]:
    """The kernel's parameter names, in launch order (Triton's JITFunction, else Inductor's
    signature)."""
    return list(getattr(launch.autotuner.fn, "arg_names", None)
                or launch.autotuner.triton_meta.get("signature", {}))


def time_alone(launches: dict[str, Launch], clock, flush) -> dict[str, float]:
    """Median microseconds of each captured kernel launched alone, L2 flushed before each and,
    for a kernel that changes its arguments in place, those restored first (else each launch
    would run on the data the one before left: an in-place GELU epilogue, on its own output)."""
    out = {}
    for name, launch in launches.items():
        def run(launch=launch):
            launch.autotuner.run(*launch.args, **launch.kwargs)

        def before(mutated=launch.mutated()):
            for live, copy in mutated:
                live.copy_(copy)
            flush()
        run()
        out[name] = 1e3 * statistics.median(clock.per_call(run, LAUNCHES, before=before))
    return out
