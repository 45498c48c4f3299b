"""Serve torchbolt: `python -m app [--host 127.0.0.1] [--port 8000] [--data-dir DIR] ...`.

Uses waitress, a multi-threaded production WSGI server (each open event stream holds a thread;
app/streams.py caps them). Beyond loopback every request needs a token (app/auth.py), and the
server refuses to start there unless jobs are sandboxed or --unsafe-no-sandbox is given.
SIGTERM and SIGINT close the compile workers, then exit.
"""

from __future__ import annotations

import argparse
import secrets
import signal
import sys
import time

from . import create_app
from .auth import is_loopback
from .serving import exposure_refusal, make_server, ready_url, sandbox_line, sandbox_state


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m app", description="Serve the torchbolt explorer.")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default 127.0.0.1; 0.0.0.0 serves a room)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--data-dir", help="share store folder (default ./var or $TORCHBOLT_DATA)")
    parser.add_argument("--workers", type=int, default=1, help="warm compile workers (default 1)")
    parser.add_argument("--threads", type=int, default=48, help="HTTP threads (default 48)")
    parser.add_argument("--token", help="access token (default beyond loopback: a random one)")
    parser.add_argument("--max-timeout", type=float, default=120.0, metavar="S",
                        help="largest time limit a job may ask for, in seconds (default 120)")
    parser.add_argument("--unsafe-no-sandbox", action="store_true",
                        help="run jobs without the sandbox, even beyond loopback")
    args = parser.parse_args(argv)
    if not 1 <= args.max_timeout <= 600:
        parser.error("--max-timeout must be between 1 and 600 seconds")
    if args.token is not None and not args.token.strip():
        parser.error("--token must not be empty")
    if args.threads < 9:
        parser.error("--threads must be at least 9 (8 are kept from event streams)")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    sandbox = sandbox_state()
    refusal = exposure_refusal(args.host, sandbox, args.unsafe_no_sandbox)
    if refusal:
        print(refusal, file=sys.stderr, flush=True)
        sys.exit(2)
    token = args.token or (None if is_loopback(args.host) else secrets.token_urlsafe(24))
    config = {"WORKERS": args.workers, "TOKEN": token, "THREADS": args.threads,
              "MAX_TIMEOUT": args.max_timeout,
              "SANDBOX": False if args.unsafe_no_sandbox else None}
    if args.data_dir:
        config["DATA_DIR"] = args.data_dir
    print(sandbox_line(sandbox, args.unsafe_no_sandbox), flush=True)
    started, apps = time.monotonic(), []

    def stop(signum, frame):
        print(f"torchbolt: {signal.Signals(signum).name}: closing the compile workers", flush=True)
        for app in apps:
            app.extensions["torchbolt.jobs"].close()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    apps.append(create_app(config))
    manager = apps[0].extensions["torchbolt.jobs"]
    print("torchbolt: warming up the compile worker (imports torch once) ...", flush=True)
    manager.wait_ready()
    server = make_server(apps[0], args.host, args.port, args.threads)
    print(f"torchbolt: ready in {time.monotonic() - started:.0f} s; serving on "
          f"{ready_url(args.host, server.effective_port, token)}", flush=True)
    try:
        server.run()
    finally:
        manager.close()


if __name__ == "__main__":
    main()
