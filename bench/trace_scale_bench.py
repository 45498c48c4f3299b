"""Import at scale (issue 46): `torchbolt report --trace-dir` against tlparse on real TORCH_TRACE
logs of about 20, 100 and 300 MB, and 1 GB (the 300 MB log four times over, `REPEATED`).

    python bench/trace_scale_bench.py [--sizes 20,100,300,1000] [--repeats 3] [--label after]

The logs are real: an N-layer encoder (attention, layer norms, MLP), forward and backward, compiled
by Inductor, recompiled each time a global it branches on takes a new value (Dynamo guards on it),
then ten small compiled functions. A recompile makes the same graph again, so Inductor's FX graph
and AOTAutograd caches answer it (as they do in a training job that recompiles): the first compile
is made in full, the rest from the caches, each with its own Dynamo graph, guards and output code
in the log. They are cached under ~/.cache/torchbolt/traces/ (made once, minutes each on two
cores). Each tool reads each log `--repeats` times, the two alternating (the first of each pair
alternates too); wall time, CPU time (user and system, child processes included: the machine is
shared, so wall time follows its load) and peak resident memory are those `/usr/bin/time -v`
reports of the process, with the load average (1 min) before each run. Writes
bench/results/trace_scale_LABEL.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "torchbolt", "traces")
VENV_BIN = os.path.dirname(sys.executable)
# Target size in MB -> (encoder layers, compiles of the encoder).
LOGS = {20: (16, 5), 100: (32, 12), 300: (32, 37)}  # 20.9, 85.7 and 264 MB made here
# Target size in MB -> (the logged run, times over): a log larger than a run here makes in an hour
# is that run's log again and again in one file, as a script that calls `torch._dynamo.reset()`
# between runs logs it (PyTorch numbers the compiles from 0/0 again, which torchbolt reads as
# `[reset N] 0/0`). 1,058 MB.
REPEATED = {1000: (300, 4)}

WORKLOAD = '''
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F

LAYERS, COMPILES = int(sys.argv[1]), int(sys.argv[2])
VERSION = 0
torch._dynamo.config.recompile_limit = COMPILES + 1


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.qkv, self.out = heads, nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                           v.transpose(1, 2))
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.norm1, self.attn = nn.LayerNorm(d), Attention(d, heads)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Encoder(nn.Module):
    def __init__(self, layers, d=16, heads=2):
        super().__init__()
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        if VERSION < 0:  # Dynamo guards on the global: each new value recompiles
            x = -x
        for block in self.blocks:
            x = block(x)
        return self.norm(x).mean()


model = torch.compile(Encoder(LAYERS), dynamic=False)
for VERSION in range(COMPILES):
    model(torch.randn(2, 8, 16)).backward()
for k in range(10):
    small = torch.compile(lambda x, k=k: torch.sin(x) * (k + 1) + x.cos())
    small(torch.randn(8))
'''


def make_log(size: int) -> str:
    """The folder of the log of about `size` MB, made if not cached."""
    if size in REPEATED:
        return repeated_log(*REPEATED[size])
    layers, compiles = LOGS[size]
    folder = os.path.join(CACHE, f"encoder-{layers}x{compiles}")
    if os.path.exists(os.path.join(folder, "DONE")):
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(CACHE, exist_ok=True)
    script = os.path.join(CACHE, "encoder_workload.py")
    with open(script, "w") as fh:
        fh.write(WORKLOAD)
    env = {**os.environ, "TORCH_TRACE": folder,
           "TORCHINDUCTOR_CACHE_DIR": os.path.join(CACHE, "inductor")}
    print(f"making the {size} MB log ({layers} layers, {compiles} compiles) ...", flush=True)
    subprocess.run([sys.executable, script, str(layers), str(compiles)], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(folder, "DONE"), "w") as fh:
        fh.write(f"{layers} layers, {compiles} compiles\n")
    return folder


def repeated_log(size: int, times: int) -> str:
    """The folder of the `size` MB log written `times` times over in one file, made if not
    cached."""
    source = make_log(size)
    folder = f"{source}-x{times}"
    if os.path.exists(os.path.join(folder, "DONE")):
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    with open(os.path.join(folder, os.path.basename(log_file(source))), "wb") as out:
        for _ in range(times):
            with open(log_file(source), "rb") as fh:
                shutil.copyfileobj(fh, out, 1 << 22)
    with open(os.path.join(folder, "DONE"), "w") as fh:
        fh.write(f"{os.path.basename(source)} {times} times over\n")
    return folder


def log_file(folder: str) -> str:
    return next(os.path.join(folder, n) for n in sorted(os.listdir(folder)) if n.endswith(".log"))


def timed(command: list[str], cwd: str) -> dict:
    """Wall seconds and peak RSS (MiB) of the command, as `/usr/bin/time -v` reports them."""
    load = os.getloadavg()[0]
    done = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True,
                          cwd=cwd)
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} failed: {done.stderr[-2000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)",
                     done.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    cpu = sum(float(re.search(rf"{kind} time \(seconds\): ([\d.]+)", done.stderr)[1])
              for kind in ("User", "System"))
    seconds = int(wall[1] or 0) * 3600 + int(wall[2]) * 60 + float(wall[3])
    return {"seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2),
            "peak_mib": round(int(rss[1]) / 1024, 1), "load_1min": round(load, 2)}


def commands(folder: str, out: str) -> dict[str, list[str]]:
    """Each tool's command line (run in `root`: torchbolt's is the CLI of that checkout)."""
    return {"tlparse": [os.path.join(VENV_BIN, "tlparse"), log_file(folder), "-o",
                        os.path.join(out, "tl_out"), "--overwrite", "--no-browser"],
            "torchbolt": [sys.executable, "-m", "compiler_core", "report", "--trace-dir", folder,
                          "-o", os.path.join(out, "report.html")]}


def bench(size: int, repeats: int, root: str) -> dict:
    folder = make_log(size)
    runs: dict[str, list[dict]] = {"tlparse": [], "torchbolt": []}
    with tempfile.TemporaryDirectory() as out:
        tools = commands(folder, out)
        for i in range(repeats):
            for tool in (("tlparse", "torchbolt") if i % 2 == 0 else ("torchbolt", "tlparse")):
                runs[tool].append(timed(tools[tool], root))  # `-m` imports from the cwd
                print(size, tool, runs[tool][-1], flush=True)
    keys = ("seconds", "cpu_seconds", "peak_mib")
    median = {tool: {key: statistics.median(r[key] for r in rs) for key in keys}
              for tool, rs in runs.items()}
    return {"log": os.path.basename(folder),
            "log_mb": round(os.path.getsize(log_file(folder)) / 1e6, 1),
            "runs": runs, "median": median,
            "ratio": {key: round(median["torchbolt"][key] / median["tlparse"][key], 2)
                      for key in keys}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="20,100,300,1000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--label", default="after", help="names the JSON: trace_scale_LABEL")
    parser.add_argument("--root", default=ROOT, help="the torchbolt checkout to time (another "
                        "one's, say `git archive` of an earlier commit, for a before/after)")
    parser.add_argument("--make-only", action="store_true", help="make the logs, time nothing")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.make_only:
        for size in sizes:
            print(make_log(size))
        return
    results = {str(size): bench(size, args.repeats, os.path.abspath(args.root))
               for size in sizes}
    version = subprocess.run([os.path.join(VENV_BIN, "tlparse"), "--version"], capture_output=True,
                             text=True).stdout.strip()
    out = os.path.join(ROOT, "bench", "results", f"trace_scale_{args.label}.json")
    with open(out, "w") as fh:
        json.dump({"machine": f"{platform.machine()}, {os.cpu_count()} cores (shared)",
                   "torchbolt": subprocess.run(["git", "-C", args.root, "rev-parse", "--short",
                                                "HEAD"], capture_output=True, text=True
                                               ).stdout.strip() or args.root,
                   "tlparse": version, "repeats": args.repeats, "sizes": results}, fh, indent=1)
    for size, row in results.items():
        m = row["median"]
        print(f"{row['log_mb']} MB: " + ", ".join(
            f"{tool} {m[tool]['seconds']} s ({m[tool]['cpu_seconds']} s CPU) "
            f"{m[tool]['peak_mib']} MiB" for tool in ("tlparse", "torchbolt")))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
