"""GPU bench of kernel attribution (issue 44): `python bench/attribution_gpu.py [--only SLUG,...]
[--scripts bench/attribution_cases/X.py,...] [--out bench/results/attribution_gpu.json]`.

Runs GPU gallery examples (and any scripts given) through the product's own `Worker` and checks
each timing's `attribution` against `bench/attribution_reference.py`, a plain profiler loop
over the same callables in a process of its own (no torchbolt code, the script compiled again
there):
- compiled: each kernel's `compiled_us` against the reference's device time per call of that
  kernel (a library call: of its ATen op; rows of one kernel name in several graphs summed, as
  the reference's averages sum them); a CUDA graph replay's kernels each, and the replay against
  their sum;
- eager: per ATen op name, the sum of the rows' shares of it (`eager_ops`) against the
  reference's device time per call of that op, for top-level ops;
goal within 5 % for every figure of 20 us or more. Also: each side's rows against its own
profile's total and end-to-end time, and what attribution adds to the job's time (`cost_s`,
reading the profiles' units in the job process, against the job's wall time `job_s`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from compiler_core import Options, Worker, list_gpu_examples

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = os.path.join(ROOT, "bench", "attribution_reference.py")
GOAL, SHOWN_MIN_US = 0.05, 20.0


def reference(path: str) -> dict:
    done = subprocess.run([sys.executable, REFERENCE, path], capture_output=True, text=True,
                          timeout=600, cwd=os.path.dirname(REFERENCE))
    if done.returncode:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(ours: float, theirs: float | None) -> dict:
    ratio = ours / theirs if theirs else None
    return {"ours_us": ours, "reference_us": theirs, "ratio": ratio,
            "within_goal": ratio is not None and abs(ratio - 1) <= GOAL}


def checks(attribution: dict, ref: dict) -> dict:
    """Every kernel's compiled_us (the rows of one kernel name in several graphs summed, as the
    reference sums them; a CUDA graph replay's kernels one by one and in all) and every eager
    op's summed shares against the reference."""
    compiled, eager_ops, by_kernel = [], {}, {}
    for row in attribution["rows"]:
        if row["kind"] == "cudagraph":
            inside = [(k["kernel"], k["compiled_us"], ref["compiled"]["kernels"].get(k["kernel"]))
                      for k in row["inside"]]
            compiled += [{"kernel": name, **compare(us, theirs)} for name, us, theirs in inside
                         if us >= SHOWN_MIN_US]
            if row["compiled_us"] >= SHOWN_MIN_US and all(theirs for *_, theirs in inside):
                compiled.append({"kernel": row["kernel"], **compare(
                    row["compiled_us"], sum(theirs for *_, theirs in inside))})
        elif row["kind"] != "outside":
            by_kernel[row["kernel"]] = by_kernel.get(row["kernel"], 0.0) + row["compiled_us"]
        for op in row["eager_ops"]:
            eager_ops[op["op"]] = eager_ops.get(op["op"], 0.0) + op["us"]
    compiled += [{"kernel": name, **compare(us, ref["compiled"]["kernels"].get(
        name, ref["compiled"]["ops"].get(name)))} for name, us in by_kernel.items()
        if us >= SHOWN_MIN_US]
    eager = [{"op": name, **compare(us, ref["eager"]["ops"].get(name))}
             for name, us in eager_ops.items() if us >= SHOWN_MIN_US]
    return {"compiled": compiled, "eager": eager}


def sums(timing: dict) -> dict:
    a, totals = timing["attribution"], timing["kernels"]["totals"]
    kernel_rows = [r for r in a["rows"] if r["kind"] != "outside"]
    return {side: {"rows_us": sum(r[f"{side}_us"] for r in kernel_rows),
                   "profile_total_us": totals[side]["us_per_call"],
                   "e2e_us": a[f"{side}_e2e_us"]} for side in ("eager", "compiled")}


def run_case(worker, slug: str, path: str) -> dict:
    started = time.monotonic()
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    result = worker.run(source, Options(device="cuda", timeout=300), path)
    case = {"example": slug, "error": result["error"], "timings": [],
            "job_s": time.monotonic() - started}
    ref = reference(path)
    for timing in result["timings"]:
        a = timing.get("attribution")
        entry = {"callable": timing.get("callable"), "phases_s": timing.get("phases_s"),
                 "attribution": a}
        if a and a.get("cost_s") is not None:
            entry["cost_share_of_job"] = a["cost_s"] / case["job_s"]
        if a and "rows" in a and str(timing["callable"]) in ref:
            entry["sums"] = sums(timing)
            entry["checks"] = checks(a, ref[str(timing["callable"])])
        case["timings"].append(entry)
    case["reference"] = ref
    case["wall_s"] = time.monotonic() - started
    return case


def summary(cases: list[dict]) -> dict:
    figures = [c for case in cases for t in case["timings"] for side in ("compiled", "eager")
               for c in t.get("checks", {}).get(side, [])]
    return {"figures_20us_plus": len(figures),
            "within_5pct": sum(f["within_goal"] for f in figures),
            "ratios": sorted(round(f["ratio"], 3) for f in figures if f["ratio"]),
            "off": [f for f in figures if not f["within_goal"]]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                      "attribution_gpu.json"))
    parser.add_argument("--only", default="", help="GPU gallery slugs, comma-separated")
    parser.add_argument("--scripts", default="", help="more scripts (bench/attribution_cases/)")
    args = parser.parse_args()
    by_slug = {e.slug: e.path for e in list_gpu_examples()}
    cases = [(os.path.splitext(os.path.basename(p))[0], os.path.abspath(p))
             for p in args.scripts.split(",") if p]
    cases += [(s, by_slug[s]) for s in args.only.split(",")] if args.only else list(by_slug.items())
    import torch
    worker = Worker(sandbox=False).start()
    report = {"device": f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}",
              "goal": GOAL, "cases": []}
    for slug, path in cases:
        try:
            report["cases"].append(run_case(worker, slug, path))
        except Exception as exc:
            report["cases"].append({"example": slug, "error": repr(exc)[-3000:]})
        report["summary"] = summary([c for c in report["cases"] if "timings" in c])
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=1, default=str)
        print(slug, json.dumps(report["summary"]), flush=True)
    worker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
