"""Records real GPU profiles for the attribution tests (issue 44):
`python tests/record_attribution_gpu.py [--same-process] [--units-cost] OUT_DIR SCRIPT...` (on a GPU host; in
tests/, not bench/, as it reaches into the job process (`runtime/`), which only the tests may).
`--same-process` reads with bench/'s reference, a script among scripts, not a package: run it
with `PYTHONPATH=bench`.

Each SCRIPT runs as a torchbolt job in a process of its own (the job process's own `run_job`,
device cuda), and leaves in OUT_DIR:
- NAME.records.jsonl.gz: the job's records, as the worker would have read them;
- NAME.traces.json.gz: the Chrome-trace events of every profile the job's timings took with
  `profile_cuda` (in the order taken: eager then compiled for each timed call), the events
  the product parsed, kept whole;
- NAME.meta.json: the job's user file, torch's version and the device;
- with `--same-process`, NAME.same_process.json: for each of those profiles, the same profiler
  object read as `bench/attribution_reference.py` reads its own (key_averages), then that
  reference's loop over the same callable right after it, in this process, and NVML's SM clock
  before and after each: so that a figure the attribution and the reference process disagree on
  can be put on the join (same profile, two readers) or on the run (same process, right after;
  another process);
- with `--units-cost`, NAME.units_cost.json: for each of those profiles, its units made again in
  the job process, at that moment, with Python's collector running (as before
  `collector_paused`) and paused, in turns, timed, with the collections that ran meanwhile.
The tests (tests/test_attribution_gpu_data.py) rebuild the result from the records with the
profiles' units made again from the traces, so a change to how units are made is tested on
a real GPU profile.
"""

from __future__ import annotations

import gc
import gzip
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def keep_same_process(figures: list[dict]) -> None:
    """Patch the job's GPU profile: each profile also read by the reference's reader, then the
    reference's loop right after it (see the module's docstring), into `figures`."""
    try:
        import attribution_reference as reference  # bench/, through PYTHONPATH
    except ImportError as exc:
        raise SystemExit(f"--same-process needs bench/ on the path (PYTHONPATH=bench): {exc}")

    from compiler_core.runtime.measure import profile, timing
    taken, parse = timing.profile_cuda, profile._trace_events

    def reading(prof) -> list[dict]:
        figures.append({"same_profile": reference.read(prof, timing.PROFILED_CALLS)})
        return parse(prof)

    def profiled(fn, calls: int, flush) -> dict:
        before = reference.clock()
        out = taken(fn, calls, flush)
        figures[-1]["same_profile"]["clock"] = {"before": before, "after": reference.clock()}
        figures[-1]["loop_after"] = reference.profile(fn, flush)
        return out
    profile._trace_events, timing.profile_cuda = reading, profiled


def keep_units_cost(costs: list[dict]) -> None:
    """Patch the job's GPU units: each profile's also made in turns with the collector running
    and paused (see the module's docstring), into `costs`."""
    from compiler_core.runtime.measure import profile
    made = profile.cuda_units

    def timed(events, calls: int, skip: str):
        cost = {"events": len(events), "heap_objects": len(gc.get_objects()), "turns": []}
        for running in (True, False, True, False):
            collections: list = []

            def seen(phase, info) -> None:
                collections.append((phase, info["generation"], time.perf_counter()))
            gc.callbacks.append(seen)
            (gc.enable if running else gc.disable)()
            started = time.perf_counter()
            made.__wrapped__(events, calls, skip)
            cost["turns"].append({"collector": "running" if running else "paused",
                                  "s": time.perf_counter() - started,
                                  "collections": [(start[1], end[2] - start[2]) for start, end
                                                  in zip(collections[::2], collections[1::2])]})
            gc.callbacks.remove(seen)
            gc.enable()
        costs.append(cost)
        return made(events, calls, skip)
    profile.cuda_units = timed


def record(script: str, out_dir: str, same_process: bool, units_cost: bool) -> None:
    """In this process: run `script` as a job, keeping its records and its profiles' traces."""
    import torch

    from compiler_core import Options
    from compiler_core.runtime.measure import profile
    from compiler_core.runtime.runner import run_job
    from compiler_core.wire import RecordWriter
    traces: list[list[dict]] = []
    figures: list[dict] = []
    costs: list[dict] = []
    if same_process:
        keep_same_process(figures)
    if units_cost:
        keep_units_cost(costs)
    parse = profile._trace_events

    def keeping(prof) -> list[dict]:
        events = parse(prof)
        traces.append(events)
        return events
    profile._trace_events = keeping
    name = os.path.splitext(os.path.basename(script))[0]
    with open(script, encoding="utf-8") as fh:
        source = fh.read()
    user_file = os.path.join("/tmp", f"{name}.py")
    with open(user_file, "w", encoding="utf-8") as fh:
        fh.write(source)
    with gzip.open(os.path.join(out_dir, f"{name}.records.jsonl.gz"), "wt",
                   encoding="utf-8") as stream:
        run_job(source, user_file, Options(device="cuda"), RecordWriter(stream))
    with gzip.open(os.path.join(out_dir, f"{name}.traces.json.gz"), "wt", encoding="utf-8") as fh:
        json.dump(traces, fh)
    with open(os.path.join(out_dir, f"{name}.meta.json"), "w", encoding="utf-8") as fh:
        json.dump({"user_file": user_file, "torch": torch.__version__,
                   "device": torch.cuda.get_device_name(0), "profiles": len(traces)}, fh)
    if same_process:
        with open(os.path.join(out_dir, f"{name}.same_process.json"), "w",
                  encoding="utf-8") as fh:
            json.dump(figures, fh)
    if units_cost:
        with open(os.path.join(out_dir, f"{name}.units_cost.json"), "w", encoding="utf-8") as fh:
            json.dump(costs, fh)


def main() -> int:
    flags = [arg for arg in sys.argv[1:] if arg in ("--same-process", "--units-cost")]
    out_dir, *scripts = [arg for arg in sys.argv[1:] if arg not in flags]
    if len(scripts) == 1:
        record(scripts[0], out_dir, "--same-process" in flags, "--units-cost" in flags)
        return 0
    failed = 0
    for script in scripts:  # each in a fresh process, as a job gets
        done = subprocess.run([sys.executable, __file__, *flags, out_dir, script], cwd=ROOT)
        print(script, "exit", done.returncode, flush=True)
        failed += done.returncode != 0
    return failed


if __name__ == "__main__":
    sys.exit(main())
