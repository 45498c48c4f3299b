"""GPU bench: `python bench/gpu_timing.py [--out bench/results/gpu_timing.json] [--only SLUG,...]`.

Runs every GPU gallery example through the engine on the GPU, each job in a fresh process (see
`run_fresh`), with the GPU preview on so that the preview can be checked against the kernels that
ran; then checks our figures against
independent references measured in this process, on the same script compiled again here:
- per Triton kernel: `triton.testing.do_bench` (median, L2 flushed) of the same kernel through its
  Inductor benchmark harness (`benchmark_kernel=True` here), launched with the config the engine's
  run chose, against our cold per-launch median (profiler device time); goal within 5 %;
- end to end: `torch.utils.benchmark.Timer.blocked_autorange` (median) of the same callable on
  inputs of the same shapes, against our warm medians, eager and compiled; goal within 5 %;
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
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from compiler_core import Options  # noqa: E402
from compiler_core.gpu_gallery import list_examples  # noqa: E402
from compiler_core.records import read_records  # noqa: E402
from compiler_core.result import build_result  # noqa: E402

GOAL = 0.05
KERNEL_DEF = re.compile(r"^def (\w+)\(", re.M)


def run_fresh(source: str, user_file: str, options: Options, preview: bool = True) -> dict:
    """The result of one job run in a fresh process of its own, through the worker's own
    fresh-interpreter entry point (`python -m compiler_core.worker --job JOB.json`)."""
    with tempfile.TemporaryDirectory(prefix="torchbolt-bench-") as job_dir:
        options = dataclasses.replace(options, gpu_preview=preview)
        env = {**os.environ, "PYTHONPATH": ROOT,
               "TORCHINDUCTOR_CACHE_DIR": os.path.join(job_dir, "inductor-cache"),
               "TRITON_CACHE_DIR": os.path.join(job_dir, "triton-cache")}
        started = time.monotonic()
        with open(os.path.join(job_dir, "job.json"), "w", encoding="utf-8") as fh:
            json.dump({"source": source, "user_file": user_file, "options": options.to_dict()},
                      fh)
        proc = subprocess.run([sys.executable, "-m", "compiler_core.worker", "--job", "job.json"],
                              cwd=job_dir, env=env,
                              capture_output=True, text=True, timeout=options.timeout + 120)
        run = {"options": options.to_dict(), "stdout": proc.stdout[-20000:],
               "stderr": proc.stderr[-20000:], "duration_s": time.monotonic() - started,
               "error": None if proc.returncode == 0 else {
                   "type": "Exited", "message": f"exit code {proc.returncode}", "line": None}}
        return build_result(read_records(os.path.join(job_dir, "records.jsonl")), user_file, run)


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
    from compiler_core.callables import CompileRecorder
    from compiler_core.records import RecordWriter

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


def do_bench_kernel(module, name: str, config: dict | None) -> float:
    """Median microseconds of one launch of the kernel, with the engine's config."""
    from triton.testing import do_bench
    from compiler_core.triton_kernels import config_dict
    kernel = getattr(module, name)
    if config and kernel.configs:
        kernel.configs = [c for c in kernel.configs if config_dict(c) == config] or kernel.configs
    args = module.get_args()
    return do_bench(lambda: module.call(args), return_mode="median") * 1e3


def timer_ms(fn) -> float:
    from torch.utils.benchmark import Timer
    return Timer(stmt="fn()", globals={"fn": fn}).blocked_autorange(min_run_time=1.0).median * 1e3


def e2e_references(recorder, result: dict) -> list[dict]:
    """Timer medians for each callable's first recorded call, beside our warm medians."""
    from compiler_core import timing
    out = []
    for entry in recorder.callables:
        ours = next((t for t in result["timings"] if t["callable"] == entry.index
                     and "e2e" in t), None)
        if ours is None or not entry.calls:
            continue
        args, kwargs = timing.fresh_inputs(entry.calls[0])
        mode = timing.grad_mode_of(entry.compiled, args, kwargs)
        with timing.GRAD_MODES[mode]():
            grads = timing.backward_grads(entry.original, args, kwargs) if mode == "grad" else None
            row = {"callable": entry.name, "arguments": ours["arguments"], "mode": ours["mode"]}
            for side, fn in (("eager", entry.original), ("compiled", entry.compiled)):
                call = timing.caller(fn, args, kwargs, grads)
                for _ in range(3):
                    call()
                reference = timer_ms(call)
                mine = ours["e2e"]["warm"][side]["median_ms"]
                row[side] = {"ours_ms": mine, "timer_ms": reference,
                             "ratio": mine / reference, "within_goal": abs(mine / reference - 1)
                             <= GOAL}
        out.append(row)
    return out


def kernel_references(result: dict, modules: dict) -> list[dict]:
    ours, configs = engine_kernels(result), engine_configs(result)
    out = []
    for name, row in ours.items():
        if row["kind"] != "triton" or name not in modules:
            continue
        reference = do_bench_kernel(modules[name], name, configs.get(name))
        out.append({"kernel": name, "ours_us": row["us_per_launch"], "do_bench_us": reference,
                    "config": configs.get(name, "chosen by the harness's own autotuning"),
                    "ratio": row["us_per_launch"] / reference,
                    "within_goal": abs(row["us_per_launch"] / reference - 1) <= GOAL,
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


def run_case(example, mode: str) -> dict:
    started = time.monotonic()
    result = run_fresh(example.source, example.path,
                       Options(device="cuda", mode=mode, timeout=300))
    case = {"example": example.slug, "mode": mode, **summarize(result),
            "preview_fidelity": preview_fidelity(result)}
    if result["error"] is None and mode == "default":
        before = {id(m) for m in loaded_modules() + list(sys.modules.values())}
        recorder = run_here(example.source, example.path)
        case["kernel_references"] = kernel_references(result, harness_modules(before))
        case["e2e_references"] = e2e_references(recorder, result)
    case["wall_s"] = time.monotonic() - started
    return case


def print_table(report: dict) -> None:
    for case in report["cases"]:
        print(f"== {case['example']} ({case['mode']}) error={case.get('error')}")
        for k in case.get("kernel_references", []):
            print(f"  kernel {k['kernel'][:48]:48} ours {k['ours_us']:9.1f} us  do_bench "
                  f"{k['do_bench_us']:9.1f} us  ratio {k['ratio']:.3f}")
        for e in case.get("e2e_references", []):
            for side in ("eager", "compiled"):
                s = e[side]
                print(f"  e2e {e['callable'][:20]:20} {side:8} ours {s['ours_ms']:8.3f} ms  "
                      f"Timer {s['timer_ms']:8.3f} ms  ratio {s['ratio']:.3f}")
        for t in case["timings"]:
            if "e2e" in t:
                speed = {k: (v["speedup"] or {}).get("median") for k, v in t["e2e"].items()}
                print(f"  speedup {t['name']} {t['mode']}: {speed} ok={t['correctness']['ok']}")
        for f in case.get("preview_fidelity", []):
            print(f"  preview {f['compile_id']}: {f['identical_source']}/{len(f['ran'])} "
                  f"identical source, {f['identical_body']}/{len(f['ran'])} identical body")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                      "gpu_timing.json"))
    parser.add_argument("--only", default="", help="comma-separated slugs")
    args = parser.parse_args()
    examples = [e for e in list_examples() if not args.only or e.slug in args.only.split(",")]
    cases = [(e, "default") for e in examples]
    cases += [(e, "max-autotune") for e in examples if e.slug == "matmul_epilogue"]
    report = {"environment": environment(), "goal": GOAL, "cases": []}
    for example, mode in cases:
        try:
            report["cases"].append(run_case(example, mode))
        except Exception:
            report["cases"].append({"example": example.slug, "mode": mode,
                                    "error": traceback.format_exc()[-4000:], "timings": []})
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=1, default=str)
        print_table({"cases": report["cases"][-1:]})
    print(f"report: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
