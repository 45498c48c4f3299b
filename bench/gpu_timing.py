"""GPU bench: `python bench/gpu_timing.py [--out bench/results/gpu_timing.json] [--only SLUG,...]`.

Runs every GPU gallery example through the engine on the GPU, through the product's own
`Worker`, with the GPU preview on so that the preview can be checked against the kernels that
ran; then checks our figures against
independent references measured in this process, on the same script compiled again here:
- per Triton kernel: `triton.testing.do_bench` (median, L2 flushed) of the same kernel through its
  Inductor benchmark harness (`benchmark_kernel=True` here), launched with the config the engine's
  run chose, against our cold per-launch median (profiler device time); goal within 5 %.
  To explain gaps, also: the same kernel alone under our method (profiler, L2 flushed before each
  launch), and do_bench's own overhead (do_bench of an empty kernel minus its device time);
- end to end: `torch.utils.benchmark.Timer.blocked_autorange` (median) of the same callable on
  inputs of the same shapes, against our warm medians, eager and compiled; goal within 5 %.
  To explain gaps, also our clock here on the same callable: with the engine's calls per sample,
  and with 10x as many;
- preview fidelity: per compile, the previewed Triton kernels against those that ran.
Also runs the matmul example with mode="max-autotune" (template choices recorded). Writes the
JSON report (device, versions, every figure) and prints a table.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import platform
import re
import subprocess
import sys
import time
import traceback

import triton

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from compiler_core import Options, Worker  # noqa: E402
from compiler_core.gpu_gallery import list_examples  # noqa: E402

GOAL = 0.05
KERNEL_DEF = re.compile(r"^def (\w+)\(", re.M)


def run_job(worker, source: str, user_file: str, options: Options) -> dict:
    """One job through the product's own path: the warm worker (on a GPU machine each job runs
    in a standby interpreter, see `compiler_core.supervisor.worker.Standby`), GPU preview on so that it
    can be checked against the kernels that ran."""
    return worker.run(source, dataclasses.replace(options, gpu_preview=True), user_file)


def environment() -> dict:
    import torch
    import triton
    props = torch.cuda.get_device_properties(0)
    driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.sm,clocks.mem",
                             "--format=csv,noheader"], capture_output=True, text=True).stdout
    return {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "triton": triton.__version__, "cuda": torch.version.cuda, "python":
            platform.python_version(), "nvidia_smi": driver.strip(),
            "device_properties": {k: str(getattr(props, k)) for k in dir(props)
                                  if not k.startswith("_")}}


# ------------------------------------------------------------------ the engine's figures

def engine_kernels(result: dict) -> dict[str, dict]:
    """Our compiled-kernel rows (cold, per launch) by name, first timing that has them."""
    rows: dict[str, dict] = {}
    for timing in result["timings"]:
        for row in timing.get("kernels", {}).get("compiled", []):
            rows.setdefault(row["name"], row)
    return rows


def engine_configs(result: dict) -> dict[str, dict]:
    """The launch config the engine's run chose, per Triton kernel name used once."""
    kernels = [k for c in result["compiles"] for k in c["kernels"] if k.get("launch")]
    names = [k["name"] for k in kernels]
    return {k["name"]: k["launch"]["config"] for k in kernels if names.count(k["name"]) == 1}


def preview_fidelity(result: dict) -> list[dict]:
    """Per compile: previewed Triton kernels vs those that ran, by name and by source."""
    out = []
    for compile_ in result["compiles"]:
        preview = compile_.get("gpu_preview")
        ran = {k["name"]: k["source"] for k in compile_["kernels"] if k["kind"] == "triton"}
        if not preview or not ran:
            continue
        previewed = {k["name"]: k["source"] for k in preview["kernels"]}
        same = [n for n in ran if previewed.get(n) == ran[n]]
        same_body = [n for n in ran if n in previewed and body(previewed[n]) == body(ran[n])]
        out.append({"compile_id": compile_["id"], "ran": sorted(ran), "previewed":
                    sorted(previewed), "identical_source": len(same),
                    "identical_body": len(same_body), "notes": preview["notes"]})
    return out


def body(source: str) -> str:
    match = KERNEL_DEF.search(source)
    return source[match.start():] if match else source


# ------------------------------------------------------------- references in this process

def run_here(source: str, path: str):
    """Exec the example here with its compiles recorded; Inductor harnesses on for do_bench."""
    import torch
    import torch._inductor.config as inductor_config
    from compiler_core.runtime.callables import CompileRecorder
    from compiler_core.report.records import RecordWriter

    inductor_config.force_disable_caches = True
    inductor_config.benchmark_kernel = True
    inductor_config.compile_threads = 1  # as in the engine's worker
    torch._dynamo.reset()
    recorder = CompileRecorder(RecordWriter(io.StringIO()), Options().compile_defaults(), path)
    recorder.install()
    try:
        exec(compile(source, path, "exec"), {"__name__": "__main__", "__file__": path})
    finally:
        torch.compile = recorder.real_compile
    return recorder


def loaded_modules() -> list:
    from torch._inductor.codecache import PyCodeCache
    return list(PyCodeCache.modules) + list(getattr(PyCodeCache, "modules_no_attr", {}).values())


def harness_modules(skip: set[int]) -> dict[str, object]:
    """Inductor's per-kernel benchmark modules loaded here since `skip`, by kernel name."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    out = {}
    for module in loaded_modules() + list(sys.modules.values()):
        if id(module) in skip or not hasattr(module, "benchmark_all_configs"):
            continue
        for value in vars(module).values():
            if isinstance(value, CachingAutotuner):
                out[value.fn.__name__] = module
    return out


def bench_launch(launch, name: str, flush) -> tuple[float, float | None]:
    """(do_bench's median, the median device time of kernel `name` under our method: profiler,
    L2 flushed before each launch), in microseconds per launch."""
    from triton.testing import do_bench
    from compiler_core.runtime.measure.timing import profile_cuda
    rows = {r["name"]: r for r in profile_cuda(launch, 20, flush)}
    return (do_bench(launch, return_mode="median") * 1e3,
            rows[name]["us_per_launch"] if name in rows else None)


def kernel_timings(module, name: str, config: dict | None, flush) -> dict:
    """One launch of the kernel alone, with the engine's config (see `bench_launch`)."""
    from compiler_core.runtime.gpu.triton_kernels import config_dict
    kernel = getattr(module, name)
    if config and kernel.configs:
        kernel.configs = [c for c in kernel.configs if config_dict(c) == config] or kernel.configs
    args = module.get_args()
    do_bench_us, alone_us = bench_launch(lambda: module.call(args), name, flush)
    return {"do_bench_us": do_bench_us, "alone_us": alone_us}


@triton.jit
def empty_kernel(x):
    pass


def do_bench_overhead(flush) -> dict:
    """What do_bench adds to a kernel's device time: do_bench of an empty kernel minus that
    kernel's device time (profiler)."""
    import torch
    x = torch.empty(1, device="cuda")
    launch = lambda: empty_kernel[(1,)](x)  # noqa: E731
    launch()
    bench_us, device_us = bench_launch(launch, "empty_kernel", flush)
    return {"do_bench_us": bench_us, "device_us": device_us,
            "overhead_us": bench_us - device_us}


def timer_ms(fn) -> float:
    """Timer's median; with this process's thread count, since Timer's default (1 thread)
    changes Dynamo's GLOBAL_STATE guard, so the compiled callable would be compiled again
    and a different graph timed."""
    import torch
    from torch.utils.benchmark import Timer
    timer = Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=1.0).median * 1e3


def e2e_references(recorder, result: dict) -> list[dict]:
    """Timer medians for each callable's first recorded call, beside our warm medians; and our
    clock here on the same callable (engine's calls per sample, and 10x), to place any gap."""
    from compiler_core import timing
    clock = timing.CudaClock()
    out = []
    for entry in recorder.callables:
        ours = next((t for t in result["timings"] if t["callable"] == entry.index
                     and "e2e" in t), None)
        if ours is None or not entry.calls:
            continue
        args, kwargs = timing.fresh_inputs(entry.calls[0])
        mode = timing.grad_mode_of(entry.compiled, args, kwargs)
        calls = ours["e2e"]["warm"]["calls_per_sample"]
        with timing.GRAD_MODES[mode]():
            grads = timing.backward_grads(entry.original, args, kwargs) if mode == "grad" else None
            row = {"callable": entry.name, "arguments": ours["arguments"], "mode": ours["mode"],
                   "calls_per_sample": calls}
            for side, fn in (("eager", entry.original), ("compiled", entry.compiled)):
                call = timing.caller(fn, args, kwargs, grads)
                for _ in range(3):
                    call()
                reference = timer_ms(call)
                mine = ours["e2e"]["warm"][side]["median_ms"]
                here = {n: timing.interleaved({side: call}, clock, n, 20)[side]["median_ms"]
                        for n in (calls, 10 * calls)}
                row[side] = {"ours_ms": mine, "timer_ms": reference,
                             "ratio": mine / reference, "within_goal": abs(mine / reference - 1)
                             <= GOAL, "our_clock_here_ms": here[calls],
                             "our_clock_here_10x_calls_ms": here[10 * calls]}
        out.append(row)
    return out


def kernel_references(result: dict, modules: dict, flush, overhead: dict) -> list[dict]:
    ours, configs = engine_kernels(result), engine_configs(result)
    out = []
    for name, row in ours.items():
        if row["kind"] != "triton" or name not in modules:
            continue
        mine = row["us_per_launch"]
        reference = kernel_timings(modules[name], name, configs.get(name), flush)
        net = reference["do_bench_us"] - overhead["overhead_us"]
        out.append({"kernel": name, "ours_us": mine, **reference,
                    "config": configs.get(name, "chosen by the harness's own autotuning"),
                    "ratio": mine / reference["do_bench_us"],
                    "within_goal": abs(mine / reference["do_bench_us"] - 1) <= GOAL,
                    "ratio_to_do_bench_less_overhead": mine / net,
                    "gbps": row.get("gbps"), "pct_peak_bandwidth": row.get("pct_peak_bandwidth"),
                    "launches_per_call": row["launches"]})
    return out


# ------------------------------------------------------------------------------- one case

def summarize(result: dict) -> dict:
    """The engine's figures worth keeping: timings without plots, kernels' launch data."""
    timings = [{k: v for k, v in t.items() if k != "plots"} for t in result["timings"]]
    kernels = [{k: v for k, v in kernel.items() if k != "source"}
               for c in result["compiles"] for kernel in c["kernels"]]
    stages = {c["id"]: sorted(s for s in c["stages"] if s.startswith("triton_"))
              for c in result["compiles"]}
    return {"timings": timings, "kernels": kernels, "triton_stages": stages,
            "autotuning": [a for c in result["compiles"] for a in c.get("autotuning", [])],
            "notes": result["notes"], "stage_errors": result["stage_errors"],
            "error": result["error"], "duration_s": result["duration_s"]}


def run_case(worker, example, mode: str, flush, overhead: dict) -> dict:
    started = time.monotonic()
    result = run_job(worker, example.source, example.path,
                     Options(device="cuda", mode=mode, timeout=300))
    case = {"example": example.slug, "mode": mode, **summarize(result),
            "preview_fidelity": preview_fidelity(result)}
    if result["error"] is None and mode == "default":
        before = {id(m) for m in loaded_modules() + list(sys.modules.values())}
        recorder = run_here(example.source, example.path)
        case["kernel_references"] = kernel_references(result, harness_modules(before), flush,
                                                      overhead)
        case["e2e_references"] = e2e_references(recorder, result)
    case["wall_s"] = time.monotonic() - started
    return case


def within(ratios: list[float]) -> str:
    return f"{sum(abs(r - 1) <= GOAL for r in ratios)}/{len(ratios)}"


def summary(report: dict) -> dict:
    """How many figures meet the goal, per comparison (see the module docstring)."""
    overhead = report["do_bench_overhead"]["overhead_us"]
    kernels = [k for c in report["cases"] for k in c.get("kernel_references", [])]
    alone = [k for k in kernels if k["alone_us"] is not None]
    e2e = [e[side] for c in report["cases"] for e in c.get("e2e_references", [])
           for side in ("eager", "compiled")]
    return {
        "kernels_in_call_vs_do_bench": within([k["ratio"] for k in kernels]),
        "kernels_alone_vs_do_bench": within([k["alone_us"] / k["do_bench_us"] for k in alone]),
        "kernels_alone_vs_do_bench_less_overhead": within(
            [k["alone_us"] / (k["do_bench_us"] - overhead) for k in alone]),
        "kernels_in_call_vs_alone": [round(k["ours_us"] / k["alone_us"], 3) for k in alone],
        "e2e_vs_timer": within([s["ratio"] for s in e2e]),
        "e2e_worst_ratio": max((s["ratio"] for s in e2e), key=lambda r: abs(r - 1), default=None),
    }


def print_table(report: dict) -> None:
    for case in report["cases"]:
        print(f"== {case['example']} ({case['mode']}) error={case.get('error')}")
        for k in case.get("kernel_references", []):
            alone = f"{k['alone_us']:9.1f}" if k["alone_us"] is not None else "     n/a"
            print(f"  kernel {k['kernel'][:44]:44} ours {k['ours_us']:8.1f} us  alone {alone} us"
                  f"  do_bench {k['do_bench_us']:8.1f} us  ratio {k['ratio']:.3f}"
                  f" (less overhead {k['ratio_to_do_bench_less_overhead']:.3f})")
        for e in case.get("e2e_references", []):
            for side in ("eager", "compiled"):
                s = e[side]
                print(f"  e2e {e['callable'][:20]:20} {side:8} ours {s['ours_ms']:8.3f} ms  "
                      f"Timer {s['timer_ms']:8.3f} ms  ratio {s['ratio']:.3f}  our clock here "
                      f"{s['our_clock_here_ms']:8.3f} ms, 10x calls "
                      f"{s['our_clock_here_10x_calls_ms']:8.3f} ms")
        for t in case["timings"]:
            if "e2e" in t:
                speed = {k: (v["speedup"] or {}).get("median") for k, v in t["e2e"].items()}
                print(f"  speedup {t['name']} {t['mode']}: {speed} ok={t['correctness']['ok']}")
        for f in case.get("preview_fidelity", []):
            print(f"  preview {f['compile_id']}: {f['identical_source']}/{len(f['ran'])} "
                  f"identical source, {f['identical_body']}/{len(f['ran'])} identical body")


def write_report(report: dict, path: str) -> None:
    """Written after every case too, so that a run cut short keeps what it measured."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1, default=str)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                      "gpu_timing.json"))
    parser.add_argument("--only", default="", help="comma-separated slugs")
    args = parser.parse_args()
    examples = [e for e in list_examples() if not args.only or e.slug in args.only.split(",")]
    cases = [(e, "default") for e in examples]
    cases += [(e, "max-autotune") for e in examples if e.slug == "matmul_epilogue"]
    worker = Worker().start()  # its own process: no CUDA state shared with this one
    worker.wait_ready()
    from compiler_core.runtime.gpu.l2_flush import L2Flush
    flush = L2Flush()
    overhead = do_bench_overhead(flush)
    report = {"environment": environment(), "goal": GOAL, "do_bench_overhead": overhead,
              "cases": []}
    print(f"do_bench overhead: {overhead}")
    for example, mode in cases:
        try:
            report["cases"].append(run_case(worker, example, mode, flush, overhead))
        except Exception:
            report["cases"].append({"example": example.slug, "mode": mode,
                                    "error": traceback.format_exc()[-4000:], "timings": []})
        write_report(report, args.out)
        print_table({"cases": report["cases"][-1:]})
    worker.close()
    report["summary"] = summary(report)
    write_report(report, args.out)
    print(f"summary: {report['summary']}\nreport: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
