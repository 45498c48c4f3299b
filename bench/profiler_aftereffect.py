"""Does a finished `torch.profiler` session slow the process's later calls?
`python bench/profiler_aftereffect.py [--out bench/results/profiler_aftereffect.json]` (needs a
GPU, torchvision and transformers).

PyTorch's issue 144455: Kineto leaves CUPTI attached after profiling unless `TEARDOWN_CUPTI=1`,
and that slows every later kernel launch. For GPU gallery examples whose host paces them
(ResNet-18, GPT-2), in one process: eager and compiled timed with `triton.testing.do_bench`
(rounds, the sides taking turns) and with CUDA events around each call; then one profiler
session (CPU and CUDA activities) of a few calls; then the same timings again. Run once with the
environment as it is and once with `TEARDOWN_CUPTI=1`, each in a fresh process.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = ("07_resnet18.py", "08_gpt2_small.py")
SPAN_S, PER_CALL = 3.0, 200


def gallery_callables() -> dict:
    """Each example's compiled callable and its eager original on its first call's arguments,
    the script run as the reference runs it (`gpu_reference.record_compiles`)."""
    import torch
    from gpu_reference import GRAD_MODES, record_compiles  # bench/ is this script's folder
    out = {}
    for name in EXAMPLES:
        real = torch.compile
        entries = record_compiles()
        path = os.path.join(ROOT, "compiler_core", "gpu_gallery", name)
        with open(path, encoding="utf-8") as fh:
            exec(compile(fh.read(), path, "exec"), {"__name__": "__main__", "__file__": path})
        torch.compile = real
        entry = entries[0]
        entry["hook"].remove()
        args, kwargs, mode = entry["call"]

        def side(fn, args=args, kwargs=kwargs, mode=mode):
            def call():
                with GRAD_MODES[mode]():
                    fn(*args, **kwargs)
            return call
        out[name] = {"eager": side(entry["original"]), "compiled": side(entry["compiled"])}
    return out


def timings(sides: dict) -> dict:
    """do_bench rounds for `SPAN_S`, the sides taking turns; their paired speed-up; per-call
    events per side."""
    from gpu_reference import per_call_ms  # bench/ is this script's folder
    from triton.testing import do_bench
    rounds = {side: [] for side in sides}
    deadline, i = time.monotonic() + SPAN_S, 0
    while i < 6 or time.monotonic() < deadline:
        for side in (list(sides) if i % 2 == 0 else list(sides)[::-1]):
            rounds[side].append(do_bench(sides[side], warmup=5, rep=40, return_mode="median"))
        i += 1
    ratios = [e / c for e, c in zip(rounds["eager"], rounds["compiled"])]
    return {**{side: {"do_bench_ms": statistics.median(r),
                      "per_call_ms": per_call_ms(sides[side], PER_CALL)}
               for side, r in rounds.items()},
            "speedup_do_bench": statistics.median(ratios), "rounds": len(ratios)}


def profile(sides: dict, calls: int = 10) -> None:
    import torch
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities, record_shapes=True):
        for _ in range(calls):
            for fn in sides.values():
                fn()
        torch.cuda.synchronize()


def one_process() -> dict:
    import torch
    callables = gallery_callables()
    before = {name: timings(sides) for name, sides in callables.items()}
    for sides in callables.values():
        profile(sides)
    after = {name: timings(sides) for name, sides in callables.items()}
    return {"torch": torch.__version__, "cuda": torch.version.cuda,
            "TEARDOWN_CUPTI": os.environ.get("TEARDOWN_CUPTI"),
            "before_profiler": before, "after_profiler": after,
            "after_over_before": {name: {side: after[name][side]["do_bench_ms"]
                                         / before[name][side]["do_bench_ms"]
                                         for side in ("eager", "compiled")}
                                  for name in callables}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                      "profiler_aftereffect.json"))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_process()))
        return
    runs = {}
    for label, extra in (("default", {}), ("teardown_cupti", {"TEARDOWN_CUPTI": "1"})):
        done = subprocess.run([sys.executable, __file__, "--child"], capture_output=True,
                              text=True, env={**os.environ, **extra}, check=True)
        runs[label] = json.loads(done.stdout.strip().splitlines()[-1])
        print(label, json.dumps(runs[label]["after_over_before"]), flush=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(runs, fh, indent=1)


if __name__ == "__main__":
    main()
