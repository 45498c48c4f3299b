"""How the GPU machine's host drifts, and which speed-up estimator survives it:
`python bench/host_drift.py [--out bench/results/host_drift.json]` (needs a GPU, torchvision and
timm), or `--analyse FILE` to redo the summary of a saved run.

Three callables, eager and compiled (no_grad): a torchvision ResNet-18 and a timm ViT-tiny
(batch 8, 224x224, fp32; launch-bound: the host paces them) and a bf16 transformer block (batch
8, 1024 tokens; GPU-bound). For `IDLE_S` they are sampled in turn, each sample a block of 10
calls between CUDA events, with the host's time for the launches and the thread's CPU time
(CPU time equal to host time means the thread was never descheduled: a slow host then is a
slower CPU, not a preempted one). Then the same with another process compiling on the GPU (as
a job process's warm-up does), pinned to one core, and unpinned again; and `do_bench` against
per-call events (torchbolt's GPU clock) at the same moments. The summary says, for windows of 0.5-8 s, how often a
window's speed-up lands within 5 % of the whole run's, for the ratio of the two sides' medians
and for the median of paired (adjacent) samples' ratios.
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
IDLE_S, WARMING_S, PINNED_S, AGAIN_S = 40, 20, 25, 15
WINDOWS_S = (0.5, 1, 2, 4, 8)


def build():
    import timm
    import torch
    import torchvision
    from torch import nn
    from torch.nn import functional as F

    class Block(nn.Module):
        def __init__(self, dim=1024, heads=16):
            super().__init__()
            self.heads = heads
            self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.up, self.down = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
            q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                       for z in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
            return x + self.down(F.gelu(self.up(self.norm2(x))))

    torch.manual_seed(0)
    images = torch.randn(8, 3, 224, 224, device="cuda")
    models = {"resnet18": (torchvision.models.resnet18().cuda().eval(), images),
              "vit_tiny": (timm.create_model("vit_tiny_patch16_224").cuda().eval(), images),
              "block": (Block().cuda().bfloat16().eval(),
                        torch.randn(8, 1024, 1024, device="cuda", dtype=torch.bfloat16))}
    fns = {}
    with torch.no_grad():
        for name, (model, x) in models.items():
            compiled = torch.compile(model)
            fns[name] = {"eager": lambda m=model, x=x: m(x),
                         "compiled": lambda c=compiled, x=x: c(x)}
            for _ in range(5):
                for fn in fns[name].values():
                    fn()
    return fns


def cpu_ticks() -> list[int]:
    with open("/proc/stat") as fh:
        return [int(x) for x in fh.readline().split()[1:]]


class Sampler:
    def __init__(self, fns: dict, started: float):
        import torch
        self.torch, self.fns, self.started = torch, fns, started
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def sample(self, fn, calls: int = 10) -> dict:
        self.torch.cuda.synchronize()
        ticks, cpu, wall = cpu_ticks(), time.thread_time(), time.perf_counter()
        self.start.record()
        for _ in range(calls):
            fn()
        host_ms = (time.perf_counter() - wall) * 1e3 / calls
        cpu_ms = (time.thread_time() - cpu) * 1e3 / calls
        self.end.record()
        self.end.synchronize()
        delta = [b - a for a, b in zip(ticks, cpu_ticks())]
        return {"t": round(time.monotonic() - self.started, 4),
                "events_ms": round(self.start.elapsed_time(self.end) / calls, 5),
                "host_ms": round(host_ms, 5), "cpu_ms": round(cpu_ms, 5),
                "steal_ticks": delta[7] if len(delta) > 7 else None}

    def series(self, seconds: float, phase: str) -> list[dict]:
        rows, end = [], time.monotonic() + seconds
        with self.torch.no_grad():
            while time.monotonic() < end:
                for name, sides in self.fns.items():
                    for side, fn in sides.items():
                        rows.append({"phase": phase, "model": name, "side": side,
                                     **self.sample(fn)})
        return rows

    def per_call_ms(self, fn, calls: int, before=None) -> list[float]:
        """Each call between its own pair of events, queued one after another (as torchbolt's
        GPU clock and do_bench time), with `before` (an L2 flush) outside the timed span."""
        torch = self.torch
        pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                 for _ in range(calls)]
        torch.cuda.synchronize()
        for start, end in pairs:
            if before:
                before()
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) for start, end in pairs]

    def turns_ms(self, sides: dict, before=None, turns: int = 10, calls: int = 20) -> dict:
        """Median per side over `turns` turns of `calls` calls, the order alternating."""
        samples = {side: [] for side in sides}
        for i in range(turns):
            for side in (list(sides) if i % 2 == 0 else list(sides)[::-1]):
                samples[side] += self.per_call_ms(sides[side], calls, before)
        return {side: statistics.median(values) for side, values in samples.items()}

    def methods(self, reps: int) -> list[dict]:
        """do_bench (3 rounds a side, taking turns) beside per-call events, cold (L2 flushed)
        and warm, at the same moments."""
        from triton.testing import do_bench
        flush = self.torch.empty(256 << 20, dtype=self.torch.int8, device="cuda").zero_
        rows = []
        with self.torch.no_grad():
            for rep in range(reps):
                for name, sides in self.fns.items():
                    row = {"t": round(time.monotonic() - self.started, 3), "model": name,
                           "rep": rep}
                    rounds = {side: [] for side in sides}
                    for i in range(3):
                        for side in (list(sides) if i % 2 == 0 else list(sides)[::-1]):
                            rounds[side].append(do_bench(sides[side], warmup=10, rep=40,
                                                         return_mode="median"))
                    row["do_bench"] = {side: statistics.median(v) for side, v in rounds.items()}
                    row["events_cold"] = self.turns_ms(sides, before=flush)
                    row["events_warm"] = self.turns_ms(sides)
                    for label in ("do_bench", "events_cold", "events_warm"):
                        row[f"{label}_speedup"] = row[label]["eager"] / row[label]["compiled"]
                    rows.append(row)
        return rows


# Another process compiling and running small kernels on the GPU, as a job process's warm-up
# does ahead of its job.
COMPILING = """import torch
import torch._dynamo
for i in range(40):
    x = torch.randn(1024, device="cuda")
    torch.compile(lambda t: (t * (i + 2)).relu().sum())(x)
    torch._dynamo.reset()
"""


def measure() -> dict:
    started = time.monotonic()
    fns = build()
    report = {"compile_s": round(time.monotonic() - started, 1), "cpu_count": os.cpu_count()}
    with open("/proc/cpuinfo") as fh:
        report["cpu"] = next((line.split(":", 1)[1].strip() for line in fh
                              if line.startswith("model name")), None)
    sampler = Sampler(fns, time.monotonic())
    rows = sampler.series(IDLE_S, "idle")
    report["methods"] = sampler.methods(4)
    warming = subprocess.Popen([sys.executable, "-c", COMPILING], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    rows += sampler.series(WARMING_S, "another_process_compiling")
    warming.kill()
    warming.wait()
    all_cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {max(all_cores)})
    rows += sampler.series(PINNED_S, "pinned")
    report["methods_pinned"] = sampler.methods(3)
    os.sched_setaffinity(0, all_cores)
    rows += sampler.series(AGAIN_S, "unpinned_again")
    report["rows"] = rows
    return report


# ------------------------------------------------------------------------------ analysis

def quantile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def phases(rows: list[dict]) -> dict:
    out = {}
    for key in sorted({(r["phase"], r["model"], r["side"]) for r in rows}):
        picked = [r for r in rows if (r["phase"], r["model"], r["side"]) == key]
        times = [r["events_ms"] for r in picked]
        out["/".join(key)] = {
            "samples": len(picked), "p10_ms": quantile(times, 0.1),
            "median_ms": statistics.median(times), "p90_ms": quantile(times, 0.9),
            "cpu_over_host": statistics.median(r["cpu_ms"] / r["host_ms"] for r in picked),
            "steal_ticks": sum(r["steal_ticks"] or 0 for r in picked)}
    return out


def windows(rows: list[dict]) -> dict:
    """Per model: for each window length, the share of windows (starts 0.25 s apart) whose
    speed-up is within 5 % of the whole idle run's, and the 90th percentile of the error."""
    estimators = {
        "ratio_of_medians": lambda e, c: statistics.median(e) / statistics.median(c),
        "median_of_paired_ratios": lambda e, c: statistics.median(a / b for a, b in zip(e, c))}
    out = {}
    idle = [r for r in rows if r["phase"] == "idle"]
    for model in sorted({r["model"] for r in idle}):
        eager = [r for r in idle if r["model"] == model and r["side"] == "eager"]
        compiled = [r for r in idle if r["model"] == model and r["side"] == "compiled"]
        pairs = list(zip(eager, compiled))
        out[model] = {}
        for name, estimate in estimators.items():
            whole = estimate([e["events_ms"] for e, _ in pairs], [c["events_ms"] for _, c in pairs])
            table = {}
            for span in WINDOWS_S:
                errors, start = [], pairs[0][0]["t"]
                while start + span <= pairs[-1][0]["t"]:
                    inside = [(e["events_ms"], c["events_ms"]) for e, c in pairs
                              if start <= e["t"] < start + span]
                    errors.append(abs(estimate(*zip(*inside)) / whole - 1))
                    start += 0.25
                table[f"{span}s"] = {"within_5pct": round(sum(e <= 0.05 for e in errors)
                                                          / len(errors), 2),
                                     "p90_error": round(quantile(errors, 0.9), 3)}
            out[model][name] = {"whole_run": whole, "windows": table}
    return out


def analyse(report: dict) -> dict:
    return {"phases": phases(report["rows"]), "windows": windows(report["rows"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                      "host_drift.json"))
    parser.add_argument("--analyse", metavar="FILE", help="summarise a saved run again")
    args = parser.parse_args()
    if args.analyse:
        with open(args.analyse, encoding="utf-8") as fh:
            report = json.load(fh)
    else:
        report = measure()
    report["summary"] = analyse(report)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=None, separators=(",", ":"))
    print(json.dumps(report["summary"]["windows"], indent=1))


if __name__ == "__main__":
    main()
