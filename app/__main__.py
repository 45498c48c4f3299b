"""Serve torchbolt: `python -m app [--host 127.0.0.1] [--port 8000] [--data-dir DIR] ...`.

Uses waitress, a multi-threaded production WSGI server (each open event stream holds a thread;
app/streams.py caps them). Beyond loopback every request needs a token (app/auth.py), and the
server refuses to start there unless jobs are sandboxed or --unsafe-no-sandbox is given.
SIGTERM and SIGINT close the compile workers, then exit.

With `--broker redis://[:PASSWORD@]HOST:PORT/DB` (or $TORCHBOLT_BROKER) jobs go through Redis to
worker hosts (`python -m compiler_core worker`); `--workers N` then starts N worker slots beside
this server (0: web only). Without `--token`, all web servers of one broker share one token.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import subprocess
import sys
import time

from . import create_app
from .auth import is_loopback
from compiler_core import redact_url as redact

from .serving import exposure_refusal, make_server, ready_url, sandbox_line, sandbox_state


def parse_args(argv: list[str] | None = None, prog: str = "python -m app") -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog, description="Serve the torchbolt explorer.")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default 127.0.0.1; 0.0.0.0 serves a room)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--data-dir", help="share store folder (default ./var or $TORCHBOLT_DATA)")
    parser.add_argument("--workers", type=int, default=1, help="warm compile workers (default 1)")
    parser.add_argument("--broker", default=os.environ.get("TORCHBOLT_BROKER"),
                        help="redis://[:PASSWORD@]HOST:PORT/DB: share jobs and results with "
                             "other servers and worker hosts (default $TORCHBOLT_BROKER)")
    parser.add_argument("--environment", action="append", default=[], metavar="PYTHON",
                        help="also run jobs in another Python environment (a venv with another "
                             "torch; `scripts/setup.sh --torch VERSION` builds one): --workers "
                             "workers in it, picked on the page (repeatable)")
    parser.add_argument("--threads", type=int, default=48, help="HTTP threads (default 48)")
    parser.add_argument("--token", help="access token (default beyond loopback: a random one)")
    parser.add_argument("--max-timeout", type=float, default=120.0, metavar="S",
                        help="largest time limit a job may ask for, in seconds (default 120)")
    sandboxing = parser.add_mutually_exclusive_group()
    sandboxing.add_argument("--unsafe-no-sandbox", action="store_true",
                            help="run jobs without the sandbox, even beyond loopback")
    sandboxing.add_argument("--require-sandbox", action="store_true",
                            help="refuse to start when jobs cannot be sandboxed, even on "
                                 "loopback (beyond loopback that is the default)")
    args = parser.parse_args(argv)
    if not 1 <= args.max_timeout <= 600:
        parser.error("--max-timeout must be between 1 and 600 seconds")
    if args.token is not None and not args.token.strip():
        parser.error("--token must not be empty")
    for python in args.environment:
        if not os.access(python, os.X_OK):
            parser.error(f"--environment {python}: not an executable Python")
    if args.environment and args.broker:
        parser.error("--environment runs local workers; with --broker, start a worker host "
                     "from each environment instead (README, Scale out)")
    if args.threads < 9:
        parser.error("--threads must be at least 9 (8 are kept from event streams)")
    return args


def worker_slots(broker: str, slots: int) -> subprocess.Popen:
    """Worker slots beside this server (the broker URL travels in the environment, not argv)."""
    return subprocess.Popen([sys.executable, "-m", "compiler_core", "worker", "--slots",
                             str(slots)], env={**os.environ, "TORCHBOLT_BROKER": broker})


def main(argv: list[str] | None = None, prog: str = "python -m app") -> None:
    args = parse_args(argv, prog)
    sandbox = sandbox_state()
    runs_jobs = not args.broker or args.workers > 0  # broker, --workers 0: no job runs here
    refusal = runs_jobs and exposure_refusal(args.host, sandbox, args.unsafe_no_sandbox,
                                             args.require_sandbox)
    if refusal:
        print(refusal, file=sys.stderr, flush=True)
        sys.exit(2)
    token = args.token or (None if is_loopback(args.host) else shared_token(args.broker))
    config = {"WORKERS": args.workers, "TOKEN": token, "THREADS": args.threads,
              "MAX_TIMEOUT": args.max_timeout, "BROKER": args.broker,
              "ENVIRONMENTS": tuple(args.environment),
              "SANDBOX": False if args.unsafe_no_sandbox else args.require_sandbox or None}
    if args.data_dir:
        config["DATA_DIR"] = args.data_dir
    if runs_jobs:
        print(sandbox_line(sandbox, args.unsafe_no_sandbox), flush=True)
    started, apps, slots = time.monotonic(), [], []
    if args.broker:
        print(f"torchbolt: broker {redact(args.broker)}", flush=True)
        if runs_jobs:
            slots.append(worker_slots(args.broker, args.workers))

    def stop(signum, frame):
        print(f"torchbolt: {signal.Signals(signum).name}: closing the compile workers", flush=True)
        for app in apps:
            app.extensions["torchbolt.runs"].close()
        for proc in slots:
            proc.terminate()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    apps.append(create_app(config))
    manager = apps[0].extensions["torchbolt.runs"]
    print("torchbolt: warming up the compile worker (imports torch once) ...", flush=True)
    manager.wait_ready()
    server = make_server(apps[0], args.host, args.port, args.threads)
    print(f"torchbolt: ready in {time.monotonic() - started:.0f} s; serving on "
          f"{ready_url(args.host, server.effective_port, token)}", flush=True)
    try:
        server.run()
    finally:
        manager.close()
        for proc in slots:
            proc.terminate()


def shared_token(broker: str | None) -> str:
    """A random token; with a broker, the one all its web servers share (made by the first)."""
    if not broker:
        return secrets.token_urlsafe(24)
    from compiler_core import Broker, BrokerDown
    try:
        return Broker(broker).shared_token()
    except BrokerDown as exc:
        sys.exit(f"torchbolt: {exc}; give --token T to start without it")


if __name__ == "__main__":
    main()
