"""Serving benchmark: `python bench/serving_bench.py [--out bench/results/serving_cpu.json]
[--users 50] [--hostile 5] [--repeats 5] [--mix-hostile 10] [--parts room,mix,sandbox]`.

(A) A meetup room: a real server in this process (`create_app` with one default, i.e. sandboxed,
    worker behind waitress from `app.serving.make_server`, 127.0.0.1, any free port). All users
    submit at once, each from its own source address (127.0.0.10, .11 ...), so the per-client
    limit applies per user. Benign users send distinct small scripts (`measure: false`); hostile
    ones send a fork bomb, a memory bomb split over forked children, an endless loop, a disk fill
    of 63 MiB files in /tmp and a kill-every-visible-PID-then-loop, each with `timeout: 5`. Every
    user polls GET /api/jobs/ID every 0.1 s on its keep-alive connection until done or failed.
    Reported: benign users whose job did not end `done` with `error: null` (goal 0), each
    hostile outcome, p50/p95/max of submit -> done for benign users, the whole storm's wall time,
    and GET /api/status latency measured every second during the storm.
(C) A hostile mix (issue 23): the same room twice, first with no hostile user, then with
    `--mix-hostile` (default 10): the five above plus five at the server's trust boundary: forged
    guard and graph-break text that backtracked the server's parsers, a flood of tiny records, a
    job of malformed records (no meta, forged nodes, a 15 MB note), an upload of hostile
    TORCH_TRACE text, and event streams with bad `Last-Event-ID`s (which leaked stream slots).
    Reported: benign errors (goal 0) and the benign p95 beside the quiet room's (goal: unchanged
    within noise), each hostile outcome, /api/status latency (goal: under 1 s throughout).
(B) Sandbox on vs off on warm engines (no HTTP): `Worker(sandbox=True)` and `Worker(sandbox=False)`,
    runs interleaved, `--repeats` each: submit -> first `dynamo_output_graph` record of the
    gallery's print_graph_break (goal <= 0.3 s with the sandbox on), and the full result of
    mlp_fusion with default `Options(device="cpu")` (goal: on/off <= 1.1x). Medians.
"""

from __future__ import annotations

import argparse
import http.client
import importlib.metadata
import json
import os
import platform
import statistics
import tempfile
import threading
import time

from app import create_app
from app.serving import make_server
from compiler_core import Options, Worker, get_example, sandbox_check

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

POLL_S = 0.1
OPS = ["(x * {i}).sin() + {i}", "torch.relu(x - {i}) * x.cos()", "(x + {i}).tanh() * {i}",
       "torch.sigmoid(x * {i}) + x.exp()", "(x ** 2 + {i}).sqrt() - x"]
BENIGN = "import torch\nx = torch.arange(8.0)\nprint(torch.compile(lambda x: {op})(x).sum().item())\n"
# name: (script, the error type the sandbox should end it with)
HOSTILE = {
    "fork_bomb": ("import os\nwhile True:\n    os.fork()\n", "ProcessLimit"),
    "memory_bomb_in_children": ("import os, time\nfor _ in range(6):\n    if os.fork() == 0:\n"
                                "        block = bytearray(800 << 20)\n        time.sleep(60)\n"
                                "while True:\n    time.sleep(0.01)\n", "MemoryLimit"),
    "endless_loop": ("while True:\n    pass\n", "Timeout"),
    "disk_fill_many_files": ("import os\nblock = os.urandom(1 << 20) * 63\nfor i in range(100):\n"
                             "    with open(f'/tmp/fill{i}', 'wb') as fh:\n"
                             "        fh.write(block)\n", "DiskLimit"),
    "kill_every_visible_pid": ("import os, signal\nfor p in filter(str.isdigit, os.listdir('/proc')):"
                               "\n    try:\n        os.kill(int(p), signal.SIGKILL)\n"
                               "    except OSError:\n        pass\nwhile True:\n    pass\n",
                               "Timeout"),
}


# A job that writes records of its own into its records file (it holds the descriptor).
FORGE = ("import json, os\ndef _link(fd):\n    try:\n        return os.readlink(f'/proc/self/fd/{fd}')"
         "\n    except OSError:\n        return ''\nRECORDS = next(int(fd) for fd in os.listdir("
         "'/proc/self/fd') if _link(fd).endswith('records.jsonl'))\ndef forge(name, payload=None, "
         "cid='0/0', **meta):\n    os.write(RECORDS, json.dumps({'name': name, 'compile_id': cid, "
         "'meta': meta, 'payload': payload}).encode() + b'\\n')\nimport torch\n"
         "torch.compile(lambda x: x + 1)(torch.ones(2))\n")
BOUNDARY = {
    "forged_parser_text": (FORGE + "forge('dynamo_cpp_guards_str', '+- GuardManager: ' + 'source=' * "
                           "200000)\nforge('dynamo_graph_break_reason', 'Graph break in user code "
                           "at ' * 40000 + ' \\n' * 200000)\n", None),
    "record_flood": (FORGE + "line = json.dumps({'name': 'x', 'meta': {}}).encode() + b'\\n'\n"
                     "for _ in range(400):\n    os.write(RECORDS, line * 1000)\n", "RecordLimit"),
    "malformed_records": (FORGE + "forge('error', None, None)\nforge('fx_nodes', nodes=[{'name': 3}, "
                          "'x'])\nforge('note', None, None, text='n' * (15 << 20))\n", None),
    "hostile_upload": ("upload", None),
    "event_stream_ids": ("streams", None),
}
TRACE_HEAD = 'V1201 00:00:00.000000 1 x.py:1] {"artifact": {"name": "dynamo_graph_break_reason"' \
             ', "encoding": "string"}, "frame_id": 0, "frame_compile_id": 0, "attempt": 0}\n'


def median(values: list[float]) -> float | None:
    return round(statistics.median(values), 4) if values else None


def percentile(values: list[float], q: int) -> float | None:
    if len(values) < 2:
        return median(values)
    return round(statistics.quantiles(values, n=100, method="inclusive")[q - 1], 4)


def request(conn: http.client.HTTPConnection, method: str, path: str, body=None):
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    return response.status, json.loads(response.read())


def user_scripts(users: int, hostile: int) -> list[tuple[str, str, dict, str | None]]:
    """(kind, source, options, expected error) per user; hostile users spread over the room:
    the sandbox's attacks first, then the trust boundary's."""
    attackers = {int((k + 0.5) * users / hostile): k for k in range(hostile)} if hostile else {}
    out, quick = [], {"device": "cpu", "measure": False}
    attacks = list({**HOSTILE, **BOUNDARY}.items())
    for i in range(users):
        if i in attackers:
            name, (source, expected) = attacks[attackers[i]]
            out.append((name, source, {**quick, "timeout": 5}, expected))
        else:
            out.append(("benign", BENIGN.format(op=OPS[i % len(OPS)].format(i=i + 1)), quick, None))
    return out


def upload_hostile_trace(conn: http.client.HTTPConnection) -> tuple[int, dict]:
    """POST /api/trace with 1.3 MB of text that backtracked the break parser for minutes."""
    text = TRACE_HEAD + "\t" + "Graph break in user code at " * 40000 + "\n" + "\t \n" * 100000
    edge = "torchbolt-bench"
    body = (f'--{edge}\r\nContent-Disposition: form-data; name="log"; filename="h.log"\r\n'
            f"Content-Type: text/plain\r\n\r\n{text}\r\n--{edge}--\r\n").encode()
    conn.request("POST", "/api/trace", body=body,
                 headers={"Content-Type": f"multipart/form-data; boundary={edge}"})
    response = conn.getresponse()
    return response.status, json.loads(response.read())


def bad_event_ids(conn: http.client.HTTPConnection, job: str) -> list[int]:
    """Streams asked with `Last-Event-ID`s that once gave 500s and leaked the stream slot, then
    one good stream: its status says whether the client still has a slot (200, not 429)."""
    statuses = []
    for last in ("\xb2", "9" * 5000, "-5", "x") * 2 + ("0",):
        conn.request("GET", f"/api/jobs/{job}/events", headers={"Last-Event-ID": last})
        response = conn.getresponse()
        response.read() if response.status != 200 else response.close()
        statuses.append(response.status)
        if response.status == 200:
            conn.close()
    return statuses


def simulate_http_attack(record: dict, conn, kind: str, port: int) -> None:
    if kind == "hostile_upload":
        status, body = upload_hostile_trace(conn)
        ok = status in (200, 400)
        record.update(status=status, error=None if ok else {"type": f"HTTP {status}",
                                                            "message": body.get("error")})
        return
    status, body = request(conn, "POST", "/api/compile", {"source": BENIGN.format(
        op="x + 1"), "options": {"device": "cpu", "measure": False}})
    statuses = bad_event_ids(conn, body["job"])
    ok = all(s == 400 for s in statuses[:-1]) and statuses[-1] == 200
    record.update(status=statuses, error=None if ok else {"type": "StreamSlots",
                                                          "message": str(statuses)})


def simulate_user(i: int, port: int, script: tuple, barrier: threading.Barrier, out: dict) -> None:
    kind, source, options, expected = script
    record = out[i] = {"user": i, "kind": kind, "expected": expected}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600,
                                      source_address=(f"127.0.0.{10 + i}", 0))
    try:
        barrier.wait()  # everyone submits at once
        started = time.monotonic()
        if source in ("upload", "streams"):
            simulate_http_attack(record, conn, kind, port)
            record["completion_s"] = round(time.monotonic() - started, 3)
            return
        status, body = request(conn, "POST", "/api/compile", {"source": source, "options": options})
        if status != 202:
            record.update(status="http", error={"type": f"HTTP {status}", "message": body.get("error")})
            return
        while True:
            status, body = request(conn, "GET", f"/api/jobs/{body['job']}")
            now = time.monotonic() - started
            if body.get("status") == "running":
                record.setdefault("running_after_s", round(now, 3))
            if status != 200 or body.get("status") in ("done", "failed"):
                break
            time.sleep(POLL_S)
        result = body.get("result") or {}
        error = result.get("error") or ({"type": "ServerError", "message": body.get("message")}
                                        if body.get("status") == "failed" else None)
        record.update(status=body.get("status"), completion_s=round(now, 3),
                      server_elapsed_s=body.get("elapsed_s"), stdout=result.get("stdout", "")[-200:],
                      error=error and {k: error.get(k) for k in ("type", "message", "line")})
    except Exception as exc:  # noqa: BLE001 -- a client-side failure is a benchmark error too
        record.update(status="client", error={"type": type(exc).__name__, "message": str(exc)})
    finally:
        conn.close()


def rss_mb() -> float:
    """This process's resident memory: the server's (it runs here), its workers' not."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:")) / 1024


def probe_status(port: int, stop: threading.Event, latencies: list, rss: list) -> None:
    """GET /api/status every 0.2 s on a fresh connection until `stop`; None: no 200 answer.
    Also samples the server's resident memory."""
    while not stop.wait(0.2):
        rss.append(rss_mb())
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30,
                                          source_address=("127.0.0.250", 0))
        started = time.monotonic()
        try:
            ok = request(conn, "GET", "/api/status")[0] == 200
        except (OSError, ValueError, http.client.HTTPException):
            ok = False
        latencies.append(round(time.monotonic() - started, 4) if ok else None)
        conn.close()


def start_server(data_dir: str):
    app = create_app({"DATA_DIR": data_dir, "WORKERS": 1})
    manager = app.extensions["torchbolt.runs"]
    started = time.monotonic()
    manager.wait_ready()
    warm_s = round(time.monotonic() - started, 2)
    server = make_server(app, "127.0.0.1", 0, app.config["THREADS"])
    threading.Thread(target=server.run, daemon=True, name="waitress").start()
    return manager, server, warm_s


def bench_room(users: int, hostile: int) -> dict:
    scripts = user_scripts(users, hostile)
    with tempfile.TemporaryDirectory(prefix="torchbolt-bench-") as data_dir:
        manager, server, warm_s = start_server(data_dir)
        try:
            out: dict = {}
            barrier = threading.Barrier(users)
            threads = [threading.Thread(target=simulate_user, args=(i, server.effective_port,
                                                                   scripts[i], barrier, out))
                       for i in range(users)]
            stop, latencies, rss = threading.Event(), [], [rss_mb()]
            prober = threading.Thread(target=probe_status,
                                      args=(server.effective_port, stop, latencies, rss))
            started = time.monotonic()
            for thread in threads + [prober]:
                thread.start()
            for thread in threads:
                thread.join()
            wall_s = round(time.monotonic() - started, 2)
            stop.set()
            prober.join()
        finally:
            server.close()
            manager.close()
    return {**summarize_room([out[i] for i in range(users)], wall_s, warm_s, latencies),
            "server_rss_mb": {"start": round(rss[0]), "peak": round(max(rss)),
                              "growth": round(max(rss) - rss[0])}}


def summarize_room(records: list[dict], wall_s: float, warm_s: float, latencies: list) -> dict:
    benign = [r for r in records if r["kind"] == "benign"]
    failed = [r for r in benign if r.get("status") != "done" or r.get("error")]
    times = [r["completion_s"] for r in benign if "completion_s" in r]
    answered = [t for t in latencies if t is not None]
    keep = ("user", "status", "expected", "running_after_s", "completion_s", "error")
    hostile = {r["kind"]: {**{k: r.get(k) for k in keep},
                           "as_expected": (r.get("error") or {}).get("type") == r["expected"]}
               for r in records if r["kind"] != "benign"}
    return {"users": len(records), "benign_users": len(benign), "hostile_users": len(hostile),
            "server_warm_up_s": warm_s, "storm_wall_s": wall_s,
            "benign_errors": len(failed), "benign_error_details": failed,
            "benign_completion_s": {"p50": percentile(times, 50), "p95": percentile(times, 95),
                                    "max": max(times, default=None)},
            "benign_queue_to_running_s_median": median([r["running_after_s"] for r in benign
                                                        if "running_after_s" in r]),
            "hostile_outcomes": hostile,
            "status_during_storm_s": {"count": len(latencies), "unanswered": latencies.count(None),
                                      "median": median(answered), "max": max(answered, default=None)},
            "goal": "0 benign errors; every hostile job ends with its typed error"}


def bench_hostile_mix(users: int, hostile: int) -> dict:
    """The room quiet, then with `hostile` attackers of the sandbox and the trust boundary."""
    quiet, mixed = bench_room(users, 0), bench_room(users, hostile)
    p95 = (quiet["benign_completion_s"]["p95"], mixed["benign_completion_s"]["p95"])
    return {"quiet": {k: quiet[k] for k in ("benign_errors", "benign_completion_s",
                                            "status_during_storm_s", "storm_wall_s")},
            "mixed": mixed, "benign_p95_ratio_mixed_quiet": round(p95[1] / p95[0], 3),
            "goals": {"benign_errors": 0, "status_max_s": "< 1",
                      "met": mixed["benign_errors"] == 0
                      and (mixed["status_during_storm_s"]["max"] or 0) < 1.0}}


def timed_run(worker: Worker, example) -> tuple[float, float]:
    """(seconds to the first stage event (the Dynamo graph), seconds to the whole result)."""
    started, seen = time.monotonic(), []

    def on_event(event):
        if event.get("stage") == "dynamo_graph" and not seen:
            seen.append(time.monotonic() - started)
    result = worker.run(example.source, Options(device="cpu"), user_file=example.path,
                        listener=on_event)
    assert seen and not result["error"], result["error"]
    return seen[0], time.monotonic() - started


def bench_sandbox(repeats: int) -> dict:
    workers = {"on": Worker(sandbox=True).start(), "off": Worker(sandbox=False).start()}
    warm = {side: round(w.wait_ready(), 2) for side, w in workers.items()}
    graph_break, mlp = get_example("print_graph_break"), get_example("mlp_fusion")
    runs: dict = {"first_stage": {"on": [], "off": []}, "full_result": {"on": [], "off": []}}
    try:
        for r in range(repeats):
            for side in ("on", "off") if r % 2 == 0 else ("off", "on"):
                runs["first_stage"][side].append(timed_run(workers[side], graph_break)[0])
                runs["full_result"][side].append(timed_run(workers[side], mlp)[1])
    finally:
        for worker in workers.values():
            worker.close()
    med = {what: {side: median(v) for side, v in sides.items()} for what, sides in runs.items()}
    ratio = round(med["full_result"]["on"] / med["full_result"]["off"], 3)
    return {"worker_warm_up_s": warm,
            "scripts": {"first_stage": graph_break.slug, "full_result": mlp.slug},
            "first_stage_s": med["first_stage"], "full_result_s": med["full_result"],
            "full_result_ratio_on_off": ratio,
            "runs_s": {what: {side: [round(x, 4) for x in v] for side, v in sides.items()}
                       for what, sides in runs.items()},
            "goals": {"first_stage_sandbox_on_s": "<= 0.3",
                      "first_stage_met": med["first_stage"]["on"] <= 0.3,
                      "full_result_ratio_on_off": "<= 1.1", "full_result_met": ratio <= 1.1}}


def machine() -> dict:
    return {"platform": platform.platform(), "node": platform.node(), "nproc": os.cpu_count(),
            "python": platform.python_version(), "torch": importlib.metadata.version("torch"),
            "sandbox": sandbox_check().reason}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "serving.json"))
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--hostile", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--mix-hostile", type=int, default=len(HOSTILE) + len(BOUNDARY))
    parser.add_argument("--parts", default="room,mix,sandbox",
                        help="which of (A) room, (C) mix and (B) sandbox to run (default: all)")
    args = parser.parse_args()
    if not 0 <= args.hostile <= min(args.users, len(HOSTILE)) or args.users > 240 \
            or not 0 < args.mix_hostile <= min(args.users, len(HOSTILE) + len(BOUNDARY)):
        parser.error(f"--hostile must be 0..{len(HOSTILE)} and at most --users (<= 240)")
    parts = {"room": ("a_room", lambda: bench_room(args.users, args.hostile)),
             "mix": ("c_hostile_mix", lambda: bench_hostile_mix(args.users, args.mix_hostile)),
             "sandbox": ("b_sandbox_on_vs_off", lambda: bench_sandbox(args.repeats))}
    chosen = args.parts.split(",")
    if not set(chosen) <= set(parts):
        parser.error(f"--parts: a comma-separated list of {', '.join(parts)}")
    report = {"machine": machine(), "repeats": args.repeats}
    for name in chosen:
        key, run = parts[name]
        report[key] = run()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(report, fh, indent=2)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
