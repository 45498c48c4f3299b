"""GPU probe of the "why" views: `python bench/why_gpu_probe.py OUT.json`.

Runs small scripts through the real engine (the product's own `Worker`) on the GPU and writes,
per script, what torchbolt extracted (the run's `cudagraphs` report, each compile's `autotuning`)
beside the raw records it was built from (`cudagraph_log`, `autotune_choices`), with the torch
and Triton versions: one GPU call shows whether the extraction holds on that machine's torch.
The scripts: `mode="reduce-overhead"` with a mutated input (a skip), with a CPU tensor made in
the graph (a skip, or a graph partition where Inductor partitions), with new input sizes and a
parameter replaced (recordings and a re-recording), and `mode="max-autotune"` on a matmul
(the choices benchmarked). The same engine runs them on a CPU machine, where CUDA graphs are
never tried (`cudagraphs` stays null).
"""

from __future__ import annotations

import json
import sys
import time

from compiler_core import Job, Options, Worker

SCRIPTS = {
    "mutated_input": '''import torch

def step(x):
    x.add_(1)
    return x.sin()

step = torch.compile(step, mode="reduce-overhead")
x = torch.randn(64, device="cuda")
for _ in range(3):
    step(x)
''',
    "cpu_tensor": '''import torch

def scale(x):
    return x * 2, torch.arange(4) + 1

scale = torch.compile(scale, mode="reduce-overhead")
for _ in range(3):
    scale(torch.randn(64, device="cuda"))
''',
    "sizes_and_new_weight": '''import torch

lin = torch.nn.Linear(16, 16, device="cuda")
f = torch.compile(lin, mode="reduce-overhead")
with torch.no_grad():
    for n in (4, 8, 8, 16, 16):
        f(torch.randn(n, 16, device="cuda"))
    lin.weight = torch.nn.Parameter(torch.randn(16, 16, device="cuda"))
    for _ in range(3):
        f(torch.randn(16, 16, device="cuda"))
''',
    "max_autotune_mm": '''import torch

def mm(a, b):
    return a @ b

mm = torch.compile(mm, mode="max-autotune")
a = torch.randn(512, 512, device="cuda", dtype=torch.float16)
mm(a, a)
''',
}
RAW = ("cudagraph_log", "autotune_choices", "stage_error")


def probe(worker: Worker, slug: str, source: str) -> dict:
    job = Job(source, Options(device="cuda", measure=False, views=False), f"{slug}.py")
    started = time.monotonic()
    worker.execute(job)
    result = job.result
    return {"seconds": round(time.monotonic() - started, 1), "environment": result["environment"],
            "error": result["error"], "stage_errors": result["stage_errors"],
            "cudagraphs": result.get("cudagraphs"),
            "autotuning": {c["id"]: c.get("autotuning", []) for c in result["compiles"]},
            "records": [r for r in job.records() if r["name"] in RAW],
            "stderr_tail": result["stderr"][-3000:]}


def main(out_path: str) -> None:
    worker = Worker().start()
    worker.wait_ready()
    try:
        report = {}
        for slug, source in SCRIPTS.items():
            report[slug] = found = probe(worker, slug, source)
            print(slug, found["seconds"], "s:", json.dumps(found["cudagraphs"])[:400],
                  json.dumps(found["autotuning"])[:400], flush=True)
    finally:
        worker.close()
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1, default=str)


if __name__ == "__main__":
    main(sys.argv[1])
