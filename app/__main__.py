"""Serve torchbolt: `python -m app [--host 127.0.0.1] [--port 8000] [--data-dir DIR]`.

Uses waitress, a multi-threaded production WSGI server (each open event stream holds a thread).
"""

from __future__ import annotations

import argparse
import atexit
import time

from waitress import serve

from . import create_app


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m app", description="Serve the torchbolt explorer.")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--data-dir", help="share store folder (default ./var or $TORCHBOLT_DATA)")
    parser.add_argument("--workers", type=int, default=1, help="warm compile workers (default 1)")
    parser.add_argument("--threads", type=int, default=48, help="HTTP threads (default 48)")
    args = parser.parse_args()
    config = {"WORKERS": args.workers}
    if args.data_dir:
        config["DATA_DIR"] = args.data_dir
    started = time.monotonic()
    app = create_app(config)
    manager = app.extensions["torchbolt.jobs"]
    atexit.register(manager.close)
    print("torchbolt: warming up the compile worker (imports torch once) ...", flush=True)
    manager.wait_ready()
    print(f"torchbolt: ready in {time.monotonic() - started:.0f} s; serving on "
          f"http://{args.host}:{args.port}/", flush=True)
    serve(app, host=args.host, port=args.port, threads=args.threads, ident="torchbolt")


if __name__ == "__main__":
    main()
