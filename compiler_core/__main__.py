"""CLI: `python -m compiler_core run SCRIPT.py [--json OUT.json] [options]`, and
`python -m compiler_core worker --broker redis://HOST:PORT/DB [--device D] [--slots N]`, a worker
host serving the web servers that share that broker (cluster/host.py).

Prints one progress line per captured stage to stderr and writes the result JSON (to stdout
without --json) in every case. Exit code 0 when the script ran, 1 with a one-line message when not.

`python -m compiler_core report SCRIPT.py -o report.html [options]` runs the script the same way
and writes the result as one self-contained HTML file; `report --trace-dir DIR -o report.html`
reads the log files a `TORCH_TRACE=DIR` run wrote instead (no code runs).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from .errors import ErrorKind
from .options import Options, OptionsError, add_flags, from_flags
from .report.result import build_result
from .present.static_html import write_report
from .report.trace_log import placeholder_source, trace_result
from .supervisor import sandbox
from .supervisor.buildcache import BuildCache
from .supervisor.worker import Worker, WorkerError


def parse_args(argv: list[str], prog: str = "python -m compiler_core") -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog,
                                     description="Run a script under torch.compile; capture every stage.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run SCRIPT.py and write the result JSON")
    run.add_argument("script")
    run.add_argument("--json", metavar="OUT.json", help="write the result here (default: stdout)")
    report = sub.add_parser("report", help="write one self-contained HTML report of SCRIPT.py's "
                                           "run, or of a TORCH_TRACE log folder")
    report.add_argument("script", nargs="?")
    report.add_argument("-o", "--output", metavar="OUT.html", required=True)
    report.add_argument("--trace-dir", metavar="DIR",
                        help="read the log files a TORCH_TRACE=DIR run wrote instead of running")
    report.add_argument("--rank", type=int, help="with --trace-dir: show only this rank's log (without it, a folder of several "
                             "ranks' logs is one report, each compile named [rank N])")
    report.add_argument("--source", metavar="SCRIPT.py",
                        help="with --trace-dir: the traced script, shown beside its stages")
    for parser_ in (run, report):
        add_flags(parser_)
        parser_.add_argument("--fresh-cache", action="store_true",
                             help="build every kernel afresh instead of reusing torchbolt's "
                                  f"build cache ({default_cache_dir()}; its precompiled C++ "
                                  "header is kept, as PyTorch keeps its own)")
        parser_.add_argument("--require-sandbox", action="store_true",
                             help="refuse to run the script when the sandbox (bubblewrap) is "
                                  "missing, instead of warning and running it as this user")
    args = parser.parse_args(argv)
    if args.command == "report" and (args.script is None) == (args.trace_dir is None):
        parser.error("report: give SCRIPT.py or --trace-dir DIR (one of them)")
    return args


# C0 but newline and tab, DEL, C1: what starts a terminal's escape sequences and moves its cursor
CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def shown(text: str) -> str:
    """Text a job wrote, as the terminal must show it: each control character written out
    (`\\x1b`), never sent, so a job sets no clipboard (OSC 52), window title or colour and
    erases nothing on the user's terminal. Newlines and tabs are kept."""
    return CONTROL_CHARACTERS.sub(lambda found: f"\\x{ord(found[0]):02x}", text)


def say(line: str) -> None:
    """One line on stderr, where everything job-derived the CLI prints goes (`shown`)."""
    print(shown(line), file=sys.stderr, flush=True)


def progress(event: dict) -> None:
    """One line per stage as it arrives (the job announces each stage of a compile once), and
    one per long step after the script (timings, views) saying what it does."""
    if event["type"] == "stage":
        where = event["compile_id"] or "-"
        say(f"[{event['t']:7.2f}s] {where:>5} {event['stage']}")
    elif event["type"] == "phase":
        say(f"[{event['t']:7.2f}s]       {event['step']} ...")


def read_text(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def default_cache_dir() -> str:
    """Where the CLI keeps Inductor's and Triton's build caches from run to run: a folder of its
    own, since its jobs may write all of it (torchbolt's other caches, such as the second
    torch's virtualenv, sit beside it)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "torchbolt", "build")


def sandbox_refusal(required: bool) -> str | None:
    """Why the script must not run (`--require-sandbox` without a sandbox), else None; warns
    on stderr when it will run unsandboxed."""
    check = sandbox.check()
    if check.ok:
        return None
    if required:
        return f"--require-sandbox: the sandbox is not available: {check.reason}"
    print(f"warning: the script runs NOT sandboxed, as this user: {check.reason} "
          "(--require-sandbox refuses instead)", file=sys.stderr, flush=True)
    return None


def run_script(source: str, path: str, options: Options, fresh_cache: bool = False) -> dict:
    """The result of running the script (its source, its absolute path) in a fresh worker.
    One trusted user's runs share a build cache: kernels built before from the same source are
    reused (`supervisor/buildcache.py`: per script, within the job's disk limit), unless
    `fresh_cache`."""
    # One job: a warm-up would only add its own compile.
    cache = BuildCache(default_cache_dir(), source, fresh_cache, disk_mb=int(options.disk_mb))
    worker = Worker(warm=False, build_cache=cache)
    try:
        result = worker.run(source, options, user_file=path, listener=progress)
    except WorkerError as exc:  # the engine itself failed: still one result, with the error
        result = build_result([], path, {"options": options.to_dict(),
                                         "error": ErrorKind.WORKER_ERROR.error(str(exc))})
    finally:
        worker.close()
    return result


def trace_dir_result(args: argparse.Namespace) -> tuple[str, dict]:
    """The source to show and the result of a TORCH_TRACE folder's log files."""
    names = sorted(n for n in os.listdir(args.trace_dir) if n.endswith(".log"))
    result = trace_result({n: Path(args.trace_dir, n) for n in names}, args.rank)
    source = read_text(args.source) if args.source else placeholder_source(
        result, "Pass --source SCRIPT.py to show it here.")
    return source, result


def main(argv: list[str] | None = None, prog: str = "python -m compiler_core") -> int:
    """`prog`: the command the user typed, named in help and errors (`torchbolt` from the
    `torchbolt` command)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["worker"]:
        from .cluster import host
        return host.serve(host.parse_args(argparse.ArgumentParser(
            prog=f"{prog} worker",
            description="Run jobs from a Redis broker (see README, Scale out)."), argv[1:]))
    args = parse_args(argv, prog)
    try:
        options = from_flags(args)
        if args.command == "report" and args.trace_dir:
            source, result = trace_dir_result(args)
        else:
            path = os.path.abspath(args.script)
            source = read_text(path)
            refusal = sandbox_refusal(args.require_sandbox)
            if refusal:
                print(f"error: {refusal}", file=sys.stderr)
                return 2
            result = run_script(source, path, options, args.fresh_cache)
    except (OptionsError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.command == "report":
        with open(args.output, "w", encoding="utf-8") as fh:
            write_report(fh, source, options.to_dict() if args.script else {}, result)
        print(f"wrote {args.output}", file=sys.stderr)
    elif args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(result, indent=1))
    else:
        print(json.dumps(result, indent=1))
    error = result["error"]
    if error:
        line = f" (line {error['line']})" if error.get("line") else ""
        first = error["message"].split("\n")[0]
        say(f"error: {error['type']}{line}: {first}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
