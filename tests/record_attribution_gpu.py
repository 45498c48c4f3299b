"""Records real GPU profiles for the attribution tests (issue 44):
`python tests/record_attribution_gpu.py OUT_DIR SCRIPT...` (on a GPU host; in tests/, not
bench/, as it reaches into the job process (`runtime/`), which only the tests may).

Each SCRIPT runs as a torchbolt job in a process of its own (the job process's own `run_job`,
device cuda), and leaves in OUT_DIR:
- NAME.records.jsonl.gz: the job's records, as the worker would have read them;
- NAME.traces.json.gz: the Chrome-trace events of every profile the job's timings took with
  `profile_cuda` (in the order taken: eager then compiled for each timed call), the events
  the product parsed, kept whole;
- NAME.meta.json: the job's user file, torch's version and the device.
The tests (tests/test_attribution_gpu_data.py) rebuild the result from the records with the
profiles' units made again from the traces, so a change to how units are made is tested on
a real GPU profile.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def record(script: str, out_dir: str) -> None:
    """In this process: run `script` as a job, keeping its records and its profiles' traces."""
    import torch

    from compiler_core import Options
    from compiler_core.runtime.measure import profile
    from compiler_core.runtime.runner import run_job
    from compiler_core.wire import RecordWriter
    traces: list[list[dict]] = []
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


def main() -> int:
    out_dir, scripts = sys.argv[1], sys.argv[2:]
    if len(scripts) == 1:
        record(scripts[0], out_dir)
        return 0
    failed = 0
    for script in scripts:  # each in a fresh process, as a job gets
        done = subprocess.run([sys.executable, __file__, out_dir, script], cwd=ROOT)
        print(script, "exit", done.returncode, flush=True)
        failed += done.returncode != 0
    return failed


if __name__ == "__main__":
    sys.exit(main())
