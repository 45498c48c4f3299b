"""Latency through the web app's own path: `python bench/web_latency.py [--device auto]
[--out bench/out/web_latency.json]`; `bench/gpu_timing.py` calls `measure` for its `serving`
figures.

`python -m app` runs in a process of its own; jobs go over HTTP and their stage events come over
its event stream, as the page gets them. Each job is a new source (no stored result serves it):
- server_ready_s: process start until `/api/status` answers (the worker is warm then);
- first_job_first_stage_s, first_job_done_s: the first job, submitted at once: submit until its
  first `stage` event, and until `done`;
- warm_first_stage_s, warm_full_result_s: medians of later jobs, each submitted after the server
  sat idle for `IDLE_S` (a warm server);
- back_to_back_first_stage_s: median of jobs submitted the moment the previous one ended;
- chain: `CHAIN` jobs in a row, each submitted the moment the one before ended (what one worker's
  pool of warm standbys must keep up with): first stage of each, median and max after the first;
- cpu_jobs: `CPU_JOBS` CPU jobs after the chain (on a GPU machine each job process warms CUDA,
  not the CPU, so a CPU job pays Inductor's first CPU compile): full result of each;
- room: `--room-users` users from distinct addresses, spread evenly over `--room-seconds`,
  against a server of `--room-workers` workers: first stage and full result p50 / p90.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IDLE_S = 10.0
CHAIN = 8
CPU_JOBS = 1
SCRIPT = ("import torch\n\n\ndef f(x):\n    return torch.nn.functional.gelu(x * 2) + 1\n\n\n"
          "x = torch.randn(1024, 1024, device='cuda' if torch.cuda.is_available() else 'cpu')\n"
          "print(torch.compile(f)(x).sum().item())\n")

CPU_SCRIPT = ("import torch\n\n\ndef f(x):\n    return torch.nn.functional.gelu(x * 2) + 1\n\n\n"
              "print(torch.compile(f)(torch.randn(256, 256)).sum().item())\n")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_serving(port: int, server: subprocess.Popen, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with {server.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/api/status")
            if conn.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError("the server did not answer")


def timed_job(port: int, source: str, device: str, address: str = "127.0.0.1") -> dict:
    """Submit over HTTP from `address`, follow the event stream: seconds to the first stage
    and to done."""
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600,
                                      source_address=(address, 0))
    conn.request("POST", "/api/compile", json.dumps({"source": source,
                                                     "options": {"device": device}}),
                 {"Content-Type": "application/json"})
    job = json.loads(conn.getresponse().read())
    conn.request("GET", f"/api/jobs/{job['job']}/events")
    stream, first, event = conn.getresponse(), None, None
    while line := stream.fp.readline():
        text = line.decode().strip()
        if text.startswith("event: "):
            event = text.removeprefix("event: ")
        elif text.startswith("data: ") and event == "stage" and first is None:
            first = time.monotonic() - started
        elif text.startswith("data: ") and event == "done":
            done = json.loads(text.removeprefix("data: "))
            return {"first_stage_s": first, "done_s": time.monotonic() - started,
                    "status": done["status"], "error": done.get("error"),
                    **job_costs(conn, job["job"])}
    raise RuntimeError("the event stream ended without `done`")


def job_costs(conn: http.client.HTTPConnection, job: str) -> dict:
    """Where a job's time went, as its result states it: the job process's own duration and
    each timing's phases (correctness, series, kernels, CUDA graphs)."""
    conn.request("GET", f"/api/jobs/{job}")
    result = json.loads(conn.getresponse().read()).get("result") or {}
    return {"job_duration_s": result.get("duration_s"),
            "timing_phases_s": [t.get("phases_s") for t in result.get("timings", [])]}


def start_server(workers: int = 1) -> tuple[subprocess.Popen, int]:
    port, data = free_port(), tempfile.mkdtemp(prefix="torchbolt-web-latency-")
    server = subprocess.Popen([sys.executable, "-m", "app", "--port", str(port), "--data-dir",
                               data, "--workers", str(workers)], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    wait_until_serving(port, server)
    return server, port


def stop(server: subprocess.Popen) -> None:
    os.killpg(server.pid, signal.SIGTERM)
    server.wait(60)


def percentile(values: list[float], q: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def chain(port: int, device: str) -> dict:
    jobs = [timed_job(port, SCRIPT + f"# chain {i}\n", device) for i in range(CHAIN)]
    later = [j["first_stage_s"] for j in jobs[1:]]
    return {"first_stage_s": [round(j["first_stage_s"], 3) for j in jobs],
            "median_after_first_s": statistics.median(later), "max_after_first_s": max(later),
            "errors": [j["error"] for j in jobs if j["error"]]}


def room(device: str, users: int, seconds: float, workers: int) -> dict:
    """`users` users, each from its own address, submitting at evenly spread moments."""
    server, port = start_server(workers)
    time.sleep(IDLE_S)  # every worker's standbys warm, as before a talk
    out: dict[int, dict] = {}

    def user(i: int) -> None:
        time.sleep(i * seconds / users)
        out[i] = timed_job(port, SCRIPT + f"# room user {i}\n", device, f"127.0.0.{10 + i}")
    try:
        threads = [threading.Thread(target=user, args=(i,)) for i in range(users)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        stop(server)
    firsts = [j["first_stage_s"] for j in out.values()]
    dones = [j["done_s"] for j in out.values()]
    return {"users": users, "seconds": seconds, "workers": workers,
            "first_stage_p50_s": percentile(firsts, 50), "first_stage_p90_s": percentile(firsts, 90),
            "full_result_p50_s": percentile(dones, 50), "full_result_p90_s": percentile(dones, 90),
            "errors": [j["error"] for j in out.values() if j["error"]]}


def measure(device: str = "auto", warm_jobs: int = 3) -> dict:
    started = time.monotonic()
    server, port = start_server()
    try:
        ready = time.monotonic() - started
        first = timed_job(port, SCRIPT + "# job 0\n", device)
        warm, back_to_back = [], []
        for i in range(warm_jobs):
            time.sleep(IDLE_S)
            warm.append(timed_job(port, SCRIPT + f"# warm {i}\n", device))
            back_to_back.append(timed_job(port, SCRIPT + f"# back to back {i}\n", device))
        time.sleep(IDLE_S)
        in_a_row = chain(port, device)
        cpu = [timed_job(port, CPU_SCRIPT + f"# cpu {i}\n", "cpu") for i in range(CPU_JOBS)]
    finally:
        stop(server)
    jobs = [first, *warm, *back_to_back]
    return {"device": device, "server_ready_s": round(ready, 2), "chain": in_a_row,
            "first_job_first_stage_s": first["first_stage_s"], "first_job_done_s": first["done_s"],
            "warm_first_stage_s": statistics.median(j["first_stage_s"] for j in warm),
            "warm_full_result_s": statistics.median(j["done_s"] for j in warm),
            "back_to_back_first_stage_s": statistics.median(
                j["first_stage_s"] for j in back_to_back),
            "idle_before_warm_jobs_s": IDLE_S,
            "cpu_jobs_done_s": [round(j["done_s"], 2) for j in cpu],
            "errors": [j["error"] for j in [*jobs, *cpu] if j["error"]], "jobs": jobs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "web_latency.json"))
    parser.add_argument("--room-users", type=int, default=12)
    parser.add_argument("--room-seconds", type=float, default=20.0)
    parser.add_argument("--room-workers", type=int, default=4)
    args = parser.parse_args()
    report = measure(args.device)
    if args.room_users:
        report["room"] = room(args.device, args.room_users, args.room_seconds, args.room_workers)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1)
    print(json.dumps({k: v for k, v in report.items() if k != "jobs"}, indent=1))


if __name__ == "__main__":
    main()
