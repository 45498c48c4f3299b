"""Engine benchmark: `python bench/engine_bench.py [--repeats N] [--out bench/out/engine.json]`.

(a) full result from a warm worker vs today's workflow, `TORCH_TRACE=DIR python SCRIPT.py`
    followed by `tlparse` on the log (goal <= 0.3x);
(b) capture overhead inside a warm process: the same compile with all capture on vs off
    (goal <= 1.15x); each side runs in its own fresh process with identical warm-up;
(c) submit -> first stage event (Dynamo graph) on a warm worker (goal <= 1.0 s);
(d) the one-shot CLI, `torchbolt run --no-measure SCRIPT`, against the same TORCH_TRACE +
    tlparse flow on a graph-break script, warm (each side's own caches primed by a run before),
    cold (fresh kernel caches on both sides) and empty (nothing built before on either side),
    runs interleaved (goal <= 1.1x warm and cold; see `bench_cli`).
Medians of N repeats, measured in one run on this machine; JSON to --out (`--only cli`: (d) alone).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

from compiler_core import Options, Worker, capture_this_process, get_example

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = "mlp_fusion"  # a small gallery example with one Inductor compile
FIRST_EVENT_SCRIPT = "print_graph_break"
OVERHEAD_SOURCE = """
import torch
from torch import nn
model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16), nn.LayerNorm(16))
def step(x):
    return torch.softmax(model(x) * 2 + 1, dim=-1)
"""


def median(values: list[float]) -> float:
    return round(statistics.median(values), 4)


def todays_workflow(path: str, cache: str = "warm") -> float:
    """TORCH_TRACE run of the script plus tlparse on its log, wall clock. `cache`: "warm" reuses
    the default Inductor cache; "fresh" gives Inductor a fresh cache dir (new code, as a user who
    just edited it: PyTorch keeps its precompiled header in $TMPDIR/torchinductor_USER whatever
    the cache dir); "none" a fresh $TMPDIR too (nothing built before, header included)."""
    with tempfile.TemporaryDirectory() as trace_dir:
        env = {**os.environ, "TORCH_TRACE": os.path.join(trace_dir, "trace")}
        if cache != "warm":
            env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(trace_dir, "inductor")
        if cache == "none":
            env["TMPDIR"] = trace_dir
        started = time.monotonic()
        subprocess.run([sys.executable, path], env=env, check=True, capture_output=True)
        logs = [os.path.join(env["TORCH_TRACE"], f) for f in os.listdir(env["TORCH_TRACE"])]
        subprocess.run(["tlparse", logs[0], "-o", os.path.join(trace_dir, "out"),
                        "--overwrite", "--no-browser"], check=True, capture_output=True)
        return time.monotonic() - started


def cli_run(path: str, cache_home: str, *flags: str) -> float:
    """`torchbolt run --no-measure` of the script, its build cache under `cache_home`."""
    with tempfile.TemporaryDirectory() as out:
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "compiler_core", "run", path, "--no-measure",
                        "--json", os.path.join(out, "result.json"), *flags], cwd=ROOT,
                       check=True, capture_output=True,
                       env={**os.environ, "XDG_CACHE_HOME": cache_home})
        return time.monotonic() - started


def bench_cli(repeats: int) -> dict:
    """warm: each side's caches primed; cold: fresh kernel caches on both sides (`--fresh-cache`
    against a fresh TORCHINDUCTOR_CACHE_DIR: each keeps its precompiled header, as PyTorch
    does); empty: nothing built before on either side (a new cache home, a new $TMPDIR)."""
    path = get_example(FIRST_EVENT_SCRIPT).path
    runs: dict[str, list[float]] = {f"{side}_{cache}": [] for cache in ("warm", "cold", "empty")
                                    for side in ("cli", "trace")}
    with tempfile.TemporaryDirectory() as warm_home:
        cli_run(path, warm_home)  # prime both sides' caches
        todays_workflow(path)
        for _ in range(repeats):
            runs["cli_warm"].append(cli_run(path, warm_home))
            runs["trace_warm"].append(todays_workflow(path))
            runs["cli_cold"].append(cli_run(path, warm_home, "--fresh-cache"))
            runs["trace_cold"].append(todays_workflow(path, "fresh"))
            with tempfile.TemporaryDirectory() as empty_home:
                runs["cli_empty"].append(cli_run(path, empty_home))
            runs["trace_empty"].append(todays_workflow(path, "none"))
    med = {side: median(values) for side, values in runs.items()}
    return {"script": FIRST_EVENT_SCRIPT, "median_s": med,
            **{f"ratio_{cache}": round(med[f"cli_{cache}"] / med[f"trace_{cache}"], 3)
               for cache in ("warm", "cold", "empty")},
            "runs_s": {side: [round(v, 2) for v in values] for side, values in runs.items()},
            "goal": "ratio <= 1.1 warm and cold"}


def run_timed(worker: Worker, example, measure: bool = True) -> tuple[float, float]:
    """(seconds until the last stage record arrived, seconds until the whole result: with
    `measure`, the eager-vs-compiled timings that follow the stages)."""
    started = time.monotonic()
    last_stage = [0.0]

    def on_event(event):  # the timings that follow the stages are not a capture stage
        if event["type"] == "stage" and event["stage"] != "timings":
            last_stage[0] = time.monotonic() - started
    worker.run(example.source, Options(device="cpu", measure=measure), user_file=example.path,
               listener=on_event)
    return last_stage[0], time.monotonic() - started


def bench_full_result(worker: Worker, repeats: int) -> dict:
    example = get_example(SCRIPT)
    runs = [run_timed(worker, example) for _ in range(repeats)]
    stages, full = median([r[0] for r in runs]), median([r[1] for r in runs])
    unmeasured = median([run_timed(worker, example, measure=False)[1] for _ in range(repeats)])
    cold = median([todays_workflow(example.path, "fresh") for _ in range(repeats)])
    warm = median([todays_workflow(example.path) for _ in range(repeats)])
    return {"script": SCRIPT, "torchbolt_all_stages_s": stages,
            "torchbolt_full_result_with_timings_s": full,
            "torchbolt_full_result_measure_off_s": unmeasured,
            "torch_trace_tlparse_cold_cache_s": cold, "torch_trace_tlparse_warm_cache_s": warm,
            "ratio_all_stages_vs_cold_cache": round(stages / cold, 3),
            "ratio_full_result_vs_cold_cache": round(full / cold, 3),
            "ratio_full_result_measure_off_vs_cold_cache": round(unmeasured / cold, 3),
            "ratio_all_stages_vs_warm_cache": round(stages / warm, 3), "goal": "<= 0.3"}


def bench_first_event(worker: Worker, repeats: int) -> dict:
    example = get_example(FIRST_EVENT_SCRIPT)
    firsts, totals = [], []
    for _ in range(repeats):
        started = time.monotonic()
        seen: list[float] = []

        def on_event(event, seen=seen, started=started):
            if event.get("stage") == "dynamo_graph" and not seen:
                seen.append(time.monotonic() - started)
        worker.run(example.source, Options(device="cpu"), user_file=example.path,
                   listener=on_event)
        totals.append(time.monotonic() - started)
        firsts.append(seen[0])
    return {"script": FIRST_EVENT_SCRIPT, "first_stage_s": median(firsts),
            "full_result_s": median(totals), "goal": "<= 1.0 s to first stage"}


def overhead_child(capture: bool, repeats: int) -> list[float]:
    """In a fresh process: warm up, then time `repeats` fresh compiles (new code objects)."""
    import torch
    import torch._inductor.config as inductor_config

    inductor_config.force_disable_caches = True  # both sides: every compile does the full work
    inductor_config.compile_threads = 1
    if capture:
        capture_this_process(open(os.devnull, "w"), "<bench>")
    times = []
    for i in range(repeats + 1):  # the first round is warm-up
        namespace: dict = {}
        exec(compile(OVERHEAD_SOURCE, f"<bench-{i}>", "exec"), namespace)
        torch._dynamo.reset()
        fn = torch.compile(namespace["step"])
        started = time.monotonic()
        fn(torch.randn(8, 16))
        times.append(time.monotonic() - started)
    return times[1:]


def bench_overhead(repeats: int) -> dict:
    sides = {}
    for side in ("off", "on"):
        out = subprocess.run([sys.executable, __file__, "--overhead-child", side,
                              "--repeats", str(repeats)], check=True, capture_output=True,
                             text=True, cwd=ROOT)
        sides[side] = json.loads(out.stdout.strip().splitlines()[-1])
    return {"capture_off_s": median(sides["off"]), "capture_on_s": median(sides["on"]),
            "ratio": round(median(sides["on"]) / median(sides["off"]), 3), "goal": "<= 1.15"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "engine.json"))
    parser.add_argument("--overhead-child", choices=("on", "off"))
    parser.add_argument("--only", choices=("all", "cli"), default="all")
    args = parser.parse_args()
    if args.overhead_child:
        print(json.dumps(overhead_child(args.overhead_child == "on", args.repeats)))
        return
    if args.only == "cli":
        write(args.out, {"machine": f"{platform.node()} {os.cpu_count()} cores",
                         "repeats": args.repeats, "d_cli_vs_torch_trace_tlparse":
                         bench_cli(args.repeats)})
        return
    worker = Worker().start()
    warm_s = worker.wait_ready()
    report = {"machine": f"{platform.node()} {os.cpu_count()} cores", "repeats": args.repeats,
              "worker_warm_up_s": warm_s}
    try:
        report["a_full_result_vs_torch_trace_tlparse"] = bench_full_result(worker, args.repeats)
        report["c_submit_to_first_stage"] = bench_first_event(worker, args.repeats)
    finally:
        worker.close()
    report["b_capture_overhead"] = bench_overhead(args.repeats)
    report["d_cli_vs_torch_trace_tlparse"] = bench_cli(args.repeats)
    write(args.out, report)


def write(path: str, report: dict) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as fh:
        json.dump(report, fh, indent=2)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
