"""Scale-out benchmark: a room of users against 1, then 2 worker hosts on one Redis.

    python bench/scale_bench.py [--users 50] [--workers 1,2] [--measure]

Starts a real `redis-server` (free port), one web server (`python -m app --broker URL
--workers 0`) and N worker hosts (`python -m compiler_core worker --broker URL --slots 1`),
waits until all N advertise themselves, then every user submits a distinct small script at once,
each from its own address (127.0.0.10, .11 ...; the per-client limit is 2), and follows it by
polling. Reports jobs per minute, p50/p95 completion (submit to final result) and the per-job
cost (worker-seconds per job) that the README's capacity plan is computed from. Writes
bench/results/scale.json.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "results", "scale.json")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def percentile(values: list[float], q: int) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))], 2)


def user_script(i: int) -> str:
    """A small distinct script per user (distinct code: no run is shared or cached)."""
    return (f"import torch\n\n@torch.compile\ndef user_{i}(x):\n"
            f"    return torch.relu(x * {i + 1}.5) + torch.sin(x)\n\n"
            f"user_{i}(torch.randn({8 + i % 5}, 16))\n")


def request(port: int, method: str, path: str, source_ip: str, body=None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120,
                                      source_address=(source_ip, 0))
    try:
        conn.request(method, path, body=json.dumps(body) if body else None,
                     headers={"Content-Type": "application/json"})
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        conn.close()


def user(i: int, port: int, options: dict, barrier: threading.Barrier, out: list) -> None:
    ip = f"127.0.0.{10 + i}"
    barrier.wait()
    started = time.monotonic()
    status, job = request(port, "POST", "/api/compile", ip, {"source": user_script(i),
                                                            "options": options})
    record = {"user": i, "submit_status": status}
    while status == 202:
        _, answer = request(port, "GET", f"/api/jobs/{job['job']}", ip)
        if answer.get("status") in ("done", "failed"):
            record.update(status=answer["status"], completion_s=time.monotonic() - started,
                          error=(answer["result"] or {}).get("error"))
            break
        time.sleep(0.25)
    out.append(record)


def spawn(args: list[str], url: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": ROOT, "TORCHBOLT_BROKER": url})


def advertised(port: int) -> int:
    try:
        status, answer = request(port, "GET", "/api/status", "127.0.0.250")
    except OSError:
        return 0
    return sum(e["workers"] for e in answer.get("environments", [])) if status == 200 else 0


def bench(workers: int, users: int, options: dict) -> dict:
    folder = tempfile.mkdtemp(prefix="torchbolt-scale-")
    redis_port, web_port = free_port(), free_port()
    url = f"redis://127.0.0.1:{redis_port}/0"
    procs = [subprocess.Popen([shutil.which("redis-server"), "--port", str(redis_port),
                               "--dir", folder, "--save", "", "--maxmemory", "1gb",
                               "--maxmemory-policy", "noeviction"], stdout=subprocess.DEVNULL)]
    try:
        time.sleep(0.5)
        procs.append(spawn(["-m", "app", "--port", str(web_port), "--workers", "0"], url))
        procs += [spawn(["-m", "compiler_core", "worker", "--device", "cpu", "--slots", "1"],
                        url) for _ in range(workers)]
        warm = time.monotonic()
        while advertised(web_port) < workers:
            time.sleep(1)
        warm_s = time.monotonic() - warm
        records: list[dict] = []
        barrier = threading.Barrier(users)
        threads = [threading.Thread(target=user, args=(i, web_port, options, barrier, records))
                   for i in range(users)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall_s = time.monotonic() - started
    finally:
        procs[0].kill()  # redis-server; then the web server and worker hosts, with their slots
        for proc in procs[1:]:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for proc in procs:
            proc.wait()
        shutil.rmtree(folder, ignore_errors=True)
    done = [r["completion_s"] for r in records if r.get("status") == "done"]
    return {"workers": workers, "users": users, "warm_up_s": round(warm_s, 1),
            "done": len(done), "failed": sum(r.get("status") == "failed" for r in records),
            "refused": sum(r["submit_status"] != 202 for r in records),
            "wall_s": round(wall_s, 1), "jobs_per_minute": round(60 * len(done) / wall_s, 1),
            "completion_p50_s": percentile(done, 50), "completion_p95_s": percentile(done, 95),
            "worker_s_per_job": round(workers * wall_s / max(1, len(done)), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--workers", default="1,2", help="worker host counts to try, in turn")
    parser.add_argument("--measure", action="store_true", help="time each job (default off)")
    args = parser.parse_args()
    options = {"device": "cpu", "measure": args.measure}
    runs = []
    for count in [int(n) for n in args.workers.split(",")]:
        runs.append(bench(count, args.users, options))
        print(json.dumps(runs[-1]), flush=True)
    report = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "platform": platform.platform()},
              "options": options, "runs": runs}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as fh:
        json.dump(report, fh, indent=1)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
