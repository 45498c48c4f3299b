"""Reference timings for `bench/gpu_timing.py`, measured without any torchbolt code.

    python bench/gpu_reference.py overhead            -> {"environment", "do_bench_overhead"}
    python bench/gpu_reference.py reference < REQUEST -> {"kernels", "e2e"}

REQUEST is JSON: {"script": path, "kernels": {name: launch config or null},
"calls": {callable index: calls per sample}}. `reference` execs the script with `torch.compile`
patched to keep each compiled callable (in compile order, as torchbolt indexes them) and the
arguments and grad mode of its first call, Inductor's per-kernel benchmark harness on
(`benchmark_kernel`), then measures (every do_bench before any profiler session):
- per Triton kernel: `triton.testing.do_bench` (median, L2 flushed) of the kernel through its
  harness with the given config; and the same kernel alone under torchbolt's method, redone
  here with the profiler (median device time, L2 flushed before each launch);
- per callable, eager and compiled: `triton.testing.do_bench` (median; L2 flushed before each
  call, its default) in rounds, the two sides taking turns for 6 s, and the speed-up as the
  median of the rounds' ratios; in the same rounds, torchbolt's per-call method redone here
  (L2 warm and L2 flushed), to tell a method's bias from the host's drift between processes;
  one default do_bench call per side;
  `torch.utils.benchmark.Timer.blocked_autorange` (median); and CUDA events around blocks of the
  given calls per sample, and of 10x as many (median of 20).
`overhead`: what do_bench adds to a kernel (do_bench of an empty kernel minus its device time).
The script's own output goes to stderr; the last line of stdout is the JSON answer.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import torch
from torch.utils._pytree import tree_flatten

GRAD_MODES = {"grad": torch.enable_grad, "no_grad": torch.no_grad,
              "inference_mode": torch.inference_mode}


def environment() -> dict:
    import triton
    props = torch.cuda.get_device_properties(0)
    driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.sm,clocks.mem",
                             "--format=csv,noheader"], capture_output=True, text=True).stdout
    return {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "triton": triton.__version__, "cuda": torch.version.cuda, "python":
            platform.python_version(), "nvidia_smi": driver.strip(),
            "device_properties": {k: str(getattr(props, k)) for k in dir(props)
                                  if not k.startswith("_")}}


def l2_flush():
    """Writes four times the L2 size, as torchbolt's flush does (with a fill kernel here)."""
    l2_bytes = torch.cuda.get_device_properties(0).L2_cache_size
    return torch.empty(l2_bytes, dtype=torch.int32, device="cuda").zero_


def profiled_us(launch, name: str, flush, launches: int = 20) -> float | None:
    """Median device time (us) of kernel `name` over `launches` launches, each after a flush."""
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(launches):
            flush()
            launch()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as fh:
            events = json.load(fh)["traceEvents"]
    durations = [float(e["dur"]) for e in events if e.get("cat") == "kernel"
                 and e.get("name") == name]
    return statistics.median(durations) if durations else None


def empty_kernel(x):
    pass


def overhead() -> dict:
    import triton
    from triton.testing import do_bench
    kernel = triton.jit(empty_kernel)
    x = torch.empty(1, device="cuda")
    launch = lambda: kernel[(1,)](x)  # noqa: E731
    launch()
    do_bench_us = do_bench(launch, return_mode="median") * 1e3
    device_us = profiled_us(launch, "empty_kernel", l2_flush())
    return {"do_bench_us": do_bench_us, "device_us": device_us,
            "overhead_us": do_bench_us - device_us}


# ------------------------------------------------------------------ the script's callables

def grad_mode() -> str:
    if torch.is_inference_mode_enabled():
        return "inference_mode"
    return "grad" if torch.is_grad_enabled() else "no_grad"


def record_compiles() -> list[dict]:
    """Patch `torch.compile`: each compiled callable, with its first call (args, kwargs, mode)
    (a module's through a forward pre-hook, removed once the script has run)."""
    real = torch.compile
    entries: list[dict] = []

    def keep(entry, args, kwargs):
        if entry["call"] is None and not torch.compiler.is_compiling():
            entry["call"] = (args, kwargs, grad_mode())

    def compile(model=None, **options):
        if model is None:
            return lambda fn: compile(fn, **options)
        compiled = real(model, **options)
        entry = {"original": model, "compiled": compiled, "call": None}
        entries.append(entry)
        if isinstance(compiled, torch.nn.Module):  # the hook comes off after the script
            entry["hook"] = compiled.register_forward_pre_hook(
                lambda _m, a, kw: keep(entry, a, kw), with_kwargs=True)
            return compiled

        def call(*args, **kwargs):
            keep(entry, args, kwargs)
            return compiled(*args, **kwargs)
        return call

    torch.compile = compile
    return entries


def tensors(value) -> list:
    return [leaf for leaf in tree_flatten(value)[0] if isinstance(leaf, torch.Tensor)]


def caller(fn, args, kwargs, grads):
    def call():
        out = fn(*args, **kwargs)
        if grads is not None:
            torch.autograd.backward([t for t in tensors(out) if t.requires_grad], grads)
    return call


def events_ms(fn, calls: int, samples: int = 20) -> float:
    """Median over `samples` blocks of `calls` calls, CUDA events on the current stream."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(samples):
        torch.cuda.synchronize()
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / calls)
    return statistics.median(times)


def timer_ms(fn) -> float:
    """Timer's median; with this process's thread count, since Timer's default (1 thread)
    changes Dynamo's GLOBAL_STATE guard, so the compiled callable would be compiled again
    and a different graph timed."""
    from torch.utils.benchmark import Timer
    timer = Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=0.5).median * 1e3


SPAN_S, MIN_ROUNDS, ROUND_MS = 6.0, 10, 40  # do_bench rounds: eager and compiled take turns


def per_call_ms(fn, calls: int, flush=None) -> float:
    """torchbolt's per-call method redone here: `calls` calls queued one after another, each
    between its own CUDA events (with `flush`: L2 flushed before each, outside the span);
    the median."""
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
             for _ in range(calls)]
    torch.cuda.synchronize()
    for start, end in pairs:
        if flush:
            flush()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in pairs)


def rounds_of(sides: dict) -> dict[str, dict[str, list[float]]]:
    """Per method, per side, one figure a round: do_bench (median of `ROUND_MS` of calls, L2
    flushed before each) and, in the same round, torchbolt's per-call method with L2 as the
    call before left it and with L2 flushed. The sides take turns, the order alternating,
    for `SPAN_S`: the H200 machine's host drifts in episodes of seconds
    (`bench/host_drift.py`), so only figures taken at the same moments compare methods."""
    from triton.testing import do_bench
    flush = l2_flush()
    methods = ("do_bench", "per_call_l2_warm", "per_call_l2_flushed")
    rounds = {method: {side: [] for side in sides} for method in methods}
    deadline, i = time.monotonic() + SPAN_S, 0
    while i < MIN_ROUNDS or time.monotonic() < deadline:
        for side in (list(sides) if i % 2 == 0 else list(sides)[::-1]):
            ms = do_bench(sides[side], warmup=5, rep=ROUND_MS, return_mode="median")
            calls = max(3, min(200, int(ROUND_MS / ms)))
            rounds["do_bench"][side].append(ms)
            rounds["per_call_l2_warm"][side].append(per_call_ms(sides[side], calls))
            rounds["per_call_l2_flushed"][side].append(per_call_ms(sides[side], calls, flush))
        i += 1
    return rounds


def paired(rounds: dict[str, list[float]]) -> dict:
    ratios = [e / c for e, c in zip(rounds["eager"], rounds["compiled"])]
    q1, median, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    return {"median": median, "q1": q1, "q3": q3, "rounds": len(ratios)}


def sides_of(entry: dict) -> dict:
    """Eager and compiled callers on the first call's arguments, warmed up, with backward when
    the outputs require grad (random output gradients); call in the first call's grad mode."""
    args, kwargs, mode = entry["call"]
    outs = [t for t in tensors(entry["original"](*args, **kwargs)) if t.requires_grad]
    grads = [torch.randn_like(t) for t in outs] if mode == "grad" and outs else None
    sides = {side: caller(fn, args, kwargs, grads)
             for side, fn in (("eager", entry["original"]), ("compiled", entry["compiled"]))}
    for _ in range(3):
        for call in sides.values():
            call()
    return sides


def e2e(entry: dict, calls: int) -> dict:
    """Eager and compiled on the first call's arguments, in its grad mode; with backward when
    the outputs require grad (random output gradients). do_bench's speed-up: the median of
    the rounds' eager / compiled ratios (`rounds_of`), with their quartiles; each side's
    `do_bench_ms` is the median of its rounds, `do_bench_once_ms` one default do_bench call;
    `speedup_same_rounds`: torchbolt's per-call methods' speed-ups from the same rounds."""
    from triton.testing import do_bench
    with GRAD_MODES[entry["call"][2]]():
        sides = sides_of(entry)
        rounds = rounds_of(sides)
        out = {side: {"do_bench_ms": statistics.median(rounds["do_bench"][side]),
                      "do_bench_rounds_ms": rounds["do_bench"][side],
                      "do_bench_once_ms": do_bench(call, return_mode="median"),
                      "timer_ms": timer_ms(call),
                      "our_clock_here_ms": events_ms(call, calls),
                      "our_clock_here_10x_calls_ms": events_ms(call, 10 * calls)}
               for side, call in sides.items()}
        return {**out, "speedup": paired(rounds["do_bench"]),
                "speedup_same_rounds": {method: paired(r)["median"]
                                        for method, r in rounds.items() if method != "do_bench"}}


# ------------------------------------------------------------------ Inductor's kernel harness

def harness_modules() -> dict[str, object]:
    """Inductor's per-kernel benchmark modules loaded in this process, by kernel name."""
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    loaded = list(PyCodeCache.modules) + list(getattr(PyCodeCache, "modules_no_attr", {}).values())
    out = {}
    for module in loaded + list(sys.modules.values()):
        if not hasattr(module, "benchmark_all_configs"):
            continue
        for value in vars(module).values():
            if isinstance(value, CachingAutotuner):
                out[value.fn.__name__] = module
    return out


def config_dict(config) -> dict:
    out = {**config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages}
    if getattr(config, "maxnreg", None):
        out["maxnreg"] = config.maxnreg
    return out


def harness_launch(module, name: str, config: dict | None):
    """The kernel launched alone through its harness, with `config` (the engine's run's choice):
    the harness ran the script's own autotuning, which kept one launcher and dropped the other
    configs (`configs` is None afterwards); where it kept another config, the kernel is
    compiled again with this one alone."""
    autotuner = getattr(module, name)
    if config and [config_dict(launcher.config) for launcher in autotuner.launchers] != [config]:
        import triton
        options = {k: config[k] for k in ("num_warps", "num_stages", "maxnreg") if k in config}
        kwargs = {k: v for k, v in config.items() if k not in options}
        saved = autotuner.launchers, autotuner.compile_results, autotuner.configs
        autotuner.launchers, autotuner.compile_results = [], []
        autotuner.configs = [triton.Config(kwargs, **options)]
        try:
            autotuner.precompile()
        except Exception as exc:  # the harness's own config then; `config_launched` says so
            autotuner.launchers, autotuner.compile_results, autotuner.configs = saved
            print(f"{name}: could not compile with {config}: {exc}", file=sys.stderr)
    args = module.get_args()
    return lambda: module.call(args)


def launched_config(module, name: str) -> dict | None:
    launchers = getattr(module, name).launchers
    return config_dict(launchers[0].config) if len(launchers) == 1 else None


def reference(request: dict) -> dict:
    """Every do_bench figure before any profiler session: after one, Kineto leaves CUPTI
    attached and every later launch costs more (PyTorch issue 144455,
    `bench/profiler_aftereffect.py`), which a user's own do_bench would not see."""
    from triton.testing import do_bench
    import torch._inductor.config as inductor_config
    inductor_config.force_disable_caches = True
    inductor_config.benchmark_kernel = True
    inductor_config.compile_threads = 1
    entries = record_compiles()
    with open(request["script"], encoding="utf-8") as fh:
        code = compile(fh.read(), request["script"], "exec")
    with contextlib.redirect_stdout(sys.stderr):
        exec(code, {"__name__": "__main__", "__file__": request["script"]})
    for entry in entries:  # each module timed as the script's author has it
        if "hook" in entry:
            entry["hook"].remove()
    calls = {int(index): n for index, n in request["calls"].items()}
    e2e_figures = {index: e2e(entries[index], n) for index, n in calls.items()
                   if index < len(entries) and entries[index]["call"] is not None}
    modules = harness_modules()
    launches = {name: harness_launch(modules[name], name, config)
                for name, config in request["kernels"].items() if name in modules}
    kernels = {name: {"do_bench_us": do_bench(launch, return_mode="median") * 1e3,
                      "config_launched": launched_config(modules[name], name)}
               for name, launch in launches.items()}
    flush = l2_flush()
    for name, launch in launches.items():
        kernels[name]["alone_us"] = profiled_us(launch, name, flush)
    return {"kernels": kernels, "e2e": e2e_figures}


def main() -> None:
    if sys.argv[1:] == ["overhead"]:
        answer = {"environment": environment(), "do_bench_overhead": overhead()}
    elif sys.argv[1:] == ["reference"]:
        answer = reference(json.load(sys.stdin))
    else:
        sys.exit(__doc__)
    print(json.dumps(answer, default=str))


if __name__ == "__main__":
    main()
