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
- back_to_back_first_stage_s: median of jobs submitted the moment the previous one ended.
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
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IDLE_S = 10.0
SCRIPT = ("import torch\n\n\ndef f(x):\n    return torch.nn.functional.gelu(x * 2) + 1\n\n\n"
          "x = torch.randn(1024, 1024, device='cuda' if torch.cuda.is_available() else 'cpu')\n"
          "print(torch.compile(f)(x).sum().item())\n")


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


def timed_job(port: int, source: str, device: str) -> dict:
    """Submit over HTTP, follow the event stream: seconds to the first stage and to done."""
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
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


def measure(device: str = "auto", warm_jobs: int = 3) -> dict:
    port, data = free_port(), tempfile.mkdtemp(prefix="torchbolt-web-latency-")
    started = time.monotonic()
    server = subprocess.Popen([sys.executable, "-m", "app", "--port", str(port),
                               "--data-dir", data], cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_until_serving(port, server)
        ready = time.monotonic() - started
        first = timed_job(port, SCRIPT + "# job 0\n", device)
        warm, back_to_back = [], []
        for i in range(warm_jobs):
            time.sleep(IDLE_S)
            warm.append(timed_job(port, SCRIPT + f"# warm {i}\n", device))
            back_to_back.append(timed_job(port, SCRIPT + f"# back to back {i}\n", device))
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(60)
    jobs = [first, *warm, *back_to_back]
    return {"device": device, "server_ready_s": round(ready, 2),
            "first_job_first_stage_s": first["first_stage_s"], "first_job_done_s": first["done_s"],
            "warm_first_stage_s": statistics.median(j["first_stage_s"] for j in warm),
            "warm_full_result_s": statistics.median(j["done_s"] for j in warm),
            "back_to_back_first_stage_s": statistics.median(
                j["first_stage_s"] for j in back_to_back),
            "idle_before_warm_jobs_s": IDLE_S, "errors": [j["error"] for j in jobs if j["error"]],
            "jobs": jobs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "web_latency.json"))
    args = parser.parse_args()
    report = measure(args.device)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1)
    print(json.dumps({k: v for k, v in report.items() if k != "jobs"}, indent=1))


if __name__ == "__main__":
    main()
