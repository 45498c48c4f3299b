"""CLI: `python -m compiler_core run SCRIPT.py [--json OUT.json] [options]`, and
`python -m compiler_core worker --broker redis://HOST:PORT/DB [--device D] [--slots N]`, a worker
host serving the web servers that share that broker (cluster/host.py).

Prints one progress line per captured stage to stderr and writes the result JSON (to stdout
without --json) in every case. Exit code 0 when the script ran, 1 with a one-line message when not.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from .errors import ErrorKind
from .options import USER_OPTIONS, Option, Options, OptionsError
from .report.result import build_result
from .supervisor.worker import Worker, WorkerError


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m compiler_core",
                                     description="Run a script under torch.compile; capture every stage.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run SCRIPT.py and write the result JSON")
    run.add_argument("script")
    run.add_argument("--json", metavar="OUT.json", help="write the result here (default: stdout)")
    for option in USER_OPTIONS:
        add_option(run, option)
    return parser.parse_args(argv)


def add_option(parser: argparse.ArgumentParser, option: Option) -> None:
    """`--name` (choice or number) or `--name/--no-name` (bool), from the option's spec."""
    kind = {"choice": {"choices": option.choices}, "number": {"type": float},
            "bool": {"action": argparse.BooleanOptionalAction}}[option.kind]
    parser.add_argument(f"--{option.name.replace('_', '-')}", dest=option.name,
                        default=option.default, help=option.help, **kind)


def progress(event: dict) -> None:
    """One line per stage as it arrives (the job announces each stage of a compile once)."""
    if event["type"] == "stage":
        where = event["compile_id"] or "-"
        print(f"[{event['t']:7.2f}s] {where:>5} {event['stage']}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["worker"]:
        from .cluster import host
        return host.serve(host.parse_args(argparse.ArgumentParser(
            prog="python -m compiler_core worker",
            description="Run jobs from a Redis broker (see README, Scale out)."), argv[1:]))
    args = parse_args(argv)
    try:
        options = Options(**{option.name: getattr(args, option.name) for option in USER_OPTIONS})
        path = os.path.abspath(args.script)
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
    except (OptionsError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    worker = Worker()
    try:
        result = worker.run(source, options, user_file=path, listener=progress)
    except WorkerError as exc:  # the engine itself failed: still one result, with the error
        result = build_result([], path, {"options": options.to_dict(),
                                         "error": ErrorKind.WORKER_ERROR.error(str(exc))})
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
