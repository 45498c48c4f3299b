"""CLI: `python -m compiler_core run SCRIPT.py [--json OUT.json] [options]`.

Prints one progress line per captured stage to stderr and writes the result JSON (to stdout
without --json) in every case. Exit code 0 when the script ran, 1 with a one-line message when not.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from .options import BACKENDS, DEVICES, DYNAMIC, MODES, Options, OptionsError
from .report.stages import RECORD_STAGE
from .report.result import build_result
from .supervisor.worker import Worker, WorkerError


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m compiler_core",
                                     description="Run a script under torch.compile; capture every stage.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run SCRIPT.py and write the result JSON")
    run.add_argument("script")
    run.add_argument("--json", metavar="OUT.json", help="write the result here (default: stdout)")
    run.add_argument("--device", choices=DEVICES, default="auto")
    run.add_argument("--mode", choices=MODES, default="default")
    run.add_argument("--dynamic", choices=DYNAMIC, default="auto")
    run.add_argument("--fullgraph", action="store_true")
    run.add_argument("--backend", choices=BACKENDS, default="inductor")
    run.add_argument("--gpu-preview", action="store_true",
                     help="also compile the graphs for a virtual H200 (Triton stages without a GPU)")
    run.add_argument("--no-measure", dest="measure", action="store_false",
                     help="skip timing eager vs compiled after the script (faster result)")
    run.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS")
    return parser.parse_args(argv)


def progress(record: dict) -> None:
    stage = RECORD_STAGE.get(record["name"])
    if stage:
        where = record["compile_id"] or "-"
        print(f"[{record['t']:7.2f}s] {where:>5} {stage}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        options = Options(device=args.device, mode=args.mode, dynamic=args.dynamic,
                          fullgraph=args.fullgraph, backend=args.backend, timeout=args.timeout,
                          gpu_preview=args.gpu_preview, measure=args.measure)
        path = os.path.abspath(args.script)
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
    except (OptionsError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    worker = Worker()
    try:
        result = worker.run(source, options, user_file=path, on_record=progress)
    except WorkerError as exc:  # the engine itself failed: still one result, with the error
        result = build_result([], path, {"options": options.to_dict(), "error": {
            "type": "WorkerError", "message": str(exc), "line": None}})
    finally:
        worker.close()
    text = json.dumps(result, indent=1)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        print(text)
    error = result["error"]
    if error:
        line = f" (line {error['line']})" if error.get("line") else ""
        first = (error["message"].splitlines() or [""])[0]
        print(f"error: {error['type']}{line}: {first}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
