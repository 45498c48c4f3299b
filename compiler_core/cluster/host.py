"""`python -m compiler_core worker --broker URL [--device cpu|cuda] [--slots N] [--gpus 0,1]`.

Starts N slot processes (`slot.py`), each an RQ worker with its own warm sandboxed engine, and
starts a slot again when it exits. Each slot dies with this process (PR_SET_PDEATHSIG), and its
zygote and jobs with it (bubblewrap's --die-with-parent), so a SIGKILL here ends them all; the
reaper (`reaper.py`) on the other slots or web servers then retries or fails their jobs.

GPUs: slot i is pinned to GPU `gpus[i % len(gpus)]` (CUDA_VISIBLE_DEVICES), and each of its jobs
holds that GPU's lock file (flock, on a descriptor the supervisor passes into the sandbox) for
its timings only, as each job process does for its warm-up: several slots per GPU compile at
once on the CPU cores, but at most one job per GPU times at a time, and never beside a warm-up.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

from .protocol import connect, memory_warning, redact

PR_SET_PDEATHSIG = 1
RESTART_AFTER_S = 2.0


def parse_args(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    parser.add_argument("--broker", default=os.environ.get("TORCHBOLT_BROKER"),
                        help="redis://[:PASSWORD@]HOST:PORT/DB (default $TORCHBOLT_BROKER, which "
                             "keeps a password out of the process list)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="auto: cuda when nvidia-smi lists a GPU")
    parser.add_argument("--slots", type=int, help="jobs at once (default: 1, or one per GPU)")
    parser.add_argument("--gpus", help="GPU indices to use, e.g. 0,1 (default: all listed)")
    args = parser.parse_args(argv)
    if not args.broker:
        parser.error("--broker URL (or $TORCHBOLT_BROKER) is required")
    gpus = _listed_gpus() if args.gpus is None else [g for g in args.gpus.split(",") if g]
    if args.device == "auto":
        args.device = "cuda" if gpus else "cpu"
    args.gpus = gpus if args.device == "cuda" else []
    if args.device == "cuda" and not args.gpus:
        parser.error("--device cuda: no GPU listed by nvidia-smi; name them with --gpus")
    args.slots = args.slots or max(1, len(args.gpus))
    if args.slots < 1:
        parser.error("--slots must be at least 1")
    return args


def _listed_gpus() -> list[str]:
    if not shutil.which("nvidia-smi"):
        return []
    listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False)
    return [str(i) for i, line in enumerate(listing.stdout.splitlines()) if line.startswith("GPU")]


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def slot_environment(args: argparse.Namespace, index: int) -> dict:
    env = {**os.environ, "TORCHBOLT_BROKER": args.broker, "TORCHBOLT_DEVICE": args.device,
           "TORCHBOLT_SLOT": f"{socket.gethostname()}-{os.getpid()}-{index}"}
    if args.device == "cuda":
        gpu = args.gpus[index % len(args.gpus)]
        env["CUDA_VISIBLE_DEVICES"] = gpu  # its Worker locks this GPU's file (gpu_lock_path)
    else:
        env["CUDA_VISIBLE_DEVICES"] = ""  # a CPU slot on a GPU host stays on the CPU
    return env


def start_slot(args: argparse.Namespace, index: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "compiler_core.cluster.slot"],
                            env=slot_environment(args, index), preexec_fn=_die_with_parent)


def serve(args: argparse.Namespace) -> int:
    print(f"torchbolt worker: {args.slots} slot(s), device {args.device}"
          + (f" (GPUs {','.join(args.gpus)})" if args.gpus else "")
          + f", broker {redact(args.broker)}; warming up ...", flush=True)
    warning = memory_warning(connect(args.broker))
    if warning:
        print(f"torchbolt worker: warning: {warning}", file=sys.stderr, flush=True)
    slots = {index: start_slot(args, index) for index in range(args.slots)}
    stopping = []

    def stop(signum, frame):
        stopping.append(signum)
        for proc in slots.values():
            proc.send_signal(signal.SIGTERM)  # RQ's warm shutdown: the current job finishes

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while not stopping:
        time.sleep(RESTART_AFTER_S)
        for index, proc in slots.items():
            if proc.poll() is not None and not stopping:
                print(f"torchbolt worker: slot {index} exited ({proc.returncode}); restarting",
                      file=sys.stderr, flush=True)
                slots[index] = start_slot(args, index)
    for proc in slots.values():
        proc.wait()
    return 0
