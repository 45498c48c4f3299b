"""Issue 45, items 8 and 9: what a job costs the surfaces around it, a single user's and the
fleet's, is bounded by what it is allowed.

- the CLI prints a job's text (its error, a phase it names) with control characters shown, never
  sent: no clipboard write (OSC 52), window title, erase line or fake colours from a job;
- a script's build-cache folder counts toward the job's disk limit while it runs: past it the
  job is stopped (DiskLimit), and the folder is removed after the run;
- a `%%torchbolt` cell without the sandbox refuses unless told `--unsafe-no-sandbox`, and says
  which way it ran;
- a run's Redis stream sheds its records once its result is in; a run's records on the stream
  are capped; a Redis full to its maxmemory (noeviction) ends a job with a typed error and the
  fleet goes on.

A hostile job forges records straight into its records file (as in test_untrusted_live.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from test_scaleout import QUICK
from test_trust_boundary import without_bwrap
from test_untrusted_live import FIND_RECORDS

from compiler_core.cluster import protocol
from compiler_core.supervisor.buildcache import script_key

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RAW_CONTROLS = ("\x1b", "\x07", "\x9b", "\r")  # ESC, BEL, the 8-bit CSI, carriage return
FORGE_NOTES = FIND_RECORDS + """
import base64
def random_notes(count):  # 1 MB each that zlib cannot shrink much (base64 of random bytes)
    for i in range(count):
        forge('note', base64.b64encode(os.urandom(750_000)).decode(), None, text=str(i))
"""


def hostile(tag: str, body: str) -> str:
    return f"# hostile {tag} {time.time()}\n{FORGE_NOTES}\n{textwrap.dedent(body)}\n"


# -- item 8: the CLI, the build cache, the notebook

def test_the_cli_shows_a_jobs_terminal_escapes_instead_of_sending_them(tmp_path, cli_cache_home):
    """A clipboard write (OSC 52), a window title, an erase line and a fake green verdict in a
    phase name the job forges and in its exception's message reach the terminal as text."""
    script = tmp_path / "escapes.py"
    script.write_text(hostile("escapes", r"""
        forge('phase', None, None, step='\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;owned\x07copying')
        raise RuntimeError('\r\x1b[2K\x1b[32mall checks passed\x1b[0m \x9b31m')
    """))
    done = subprocess.run([sys.executable, "-m", "compiler_core", "run", str(script),
                           "--device", "cpu", "--no-measure", "--no-views"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "XDG_CACHE_HOME": str(cli_cache_home)})
    assert done.returncode == 1, done.stderr
    for stream in (done.stdout, done.stderr):
        assert not [c for c in RAW_CONTROLS if c in stream], repr(stream[-600:])
    assert json.loads(done.stdout)["error"]["type"] == "RuntimeError"
    assert r"\x1b]52;c;cm0gLXJmIH4=\x07" in done.stderr  # shown, visibly
    assert r"\x1b[32mall checks passed" in done.stderr


def tree_bytes(path: str) -> int:
    return sum(os.lstat(os.path.join(folder, name)).st_size
               for folder, _, names in os.walk(path) for name in names)


def test_a_script_filling_its_build_cache_is_stopped_at_the_disk_limit(tmp_path, monkeypatch,
                                                                      cli_cache_home):
    """A script that writes up to 512 MB into its build-cache folder, 8 MB at a time, with a
    32 MB disk limit: it is stopped near the limit with a DiskLimit error naming the build
    cache, and the folder does not outlive the run (before: all 512 MB were written, the run
    ended normally, and only then was the folder removed)."""
    from compiler_core.__main__ import run_script
    from compiler_core.options import Options
    monkeypatch.setenv("XDG_CACHE_HOME", str(cli_cache_home))
    source = ("import os\n"
              "cache = os.path.dirname(os.environ['TORCHINDUCTOR_CACHE_DIR'])\n"
              "block = os.urandom(8 << 20)\n"
              "for i in range(64):\n"
              "    with open(os.path.join(cache, f'junk{i}'), 'wb') as fh:\n"
              "        fh.write(block)\n"
              "    print(i, flush=True)\n")
    path = tmp_path / "fill.py"
    path.write_text(source)
    folder = cli_cache_home / "torchbolt" / "build" / "scripts" / script_key(source)
    peak, done = [0], threading.Event()

    def sample() -> None:
        while not done.wait(0.005):
            peak[0] = max(peak[0], tree_bytes(str(folder)) if folder.exists() else 0)

    sampler = threading.Thread(target=sample)
    sampler.start()
    started = time.monotonic()
    try:
        result = run_script(source, str(path), Options(measure=False, views=False, disk_mb=32))
    finally:
        done.set()
        sampler.join()
    written = len(result["stdout"].split())
    print(f"build cache, 32 MB limit: {written} blocks of 8 MB written, the folder's peak "
          f"{peak[0] / 2**20:.0f} MB, {time.monotonic() - started:.1f} s; {result['error']}")
    error = result["error"]
    assert error["type"] == "DiskLimit" and "build cache" in error["message"], error
    assert written < 12 and peak[0] < 96 << 20, (written, peak[0])
    assert tree_bytes(str(folder)) < 32 << 20


NOTEBOOK = """
import sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_line_magic('load_ext', 'torchbolt')
shell.run_cell_magic('torchbolt', sys.argv[1], sys.argv[2])
"""


def test_a_notebook_cell_without_the_sandbox_refuses_unless_told_unsafe(tmp_path):
    marker = tmp_path / "ran-as-me"
    cell = f"open({str(marker)!r}, 'w').write('the notebook user')\n"
    env = without_bwrap(tmp_path)

    def run_cell(flags: str) -> str:
        done = subprocess.run([sys.executable, "-c", NOTEBOOK, flags, cell], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=240)
        return done.stdout + done.stderr

    refused = run_cell("--no-measure --no-views")
    assert not marker.exists(), refused  # it did not run as the notebook's user
    assert "bubblewrap" in refused and "--unsafe-no-sandbox" in refused, refused
    unsafe = run_cell("--no-measure --no-views --unsafe-no-sandbox")
    assert marker.exists(), unsafe
    assert "NOT sandboxed" in unsafe, unsafe


# -- item 9: the fleet's Redis

@pytest.fixture(scope="module")
def fleet(fleet_host, tmp_path_factory):
    """One worker host of one slot (its runs' records capped at 16 MiB on the stream: the
    session's `fleet_host`, tests/conftest.py) and one web server on the broker; yields (web
    server port, a Redis client)."""
    from app import create_app
    from app.serving import make_server
    redis, conn = fleet_host
    app = create_app({"BROKER": redis.url, "WORKERS": 0, "WARM_FIRST_LESSON": False,
                      "DATA_DIR": str(tmp_path_factory.mktemp("web"))})
    server = make_server(app, "127.0.0.1", 0, threads=16)
    threading.Thread(target=server.run, daemon=True).start()
    try:
        yield server.effective_port, conn
    finally:
        app.extensions["torchbolt.runs"].close()
        server.close()


def run_on_fleet(fleet, source: str, timeout: float = 90) -> tuple[dict, str]:
    """Submit on the web server and wait for the end: (the finished job, its run's id)."""
    from test_scaleout import call, finished
    port, conn = fleet
    code, answer = call(port, "POST", "/api/compile", {"source": source, "options": QUICK})
    assert code == 202, answer
    done = finished(port, answer["handle"], timeout)
    return done, json.loads(conn.get(protocol.handle_key(answer["handle"])))["run"]


def stream_bytes(conn, run_id: str) -> int:
    return conn.memory_usage(protocol.run_key(run_id), samples=0) or 0


def test_a_runs_stream_sheds_its_records_once_it_ends(fleet):
    """12 MB of records: once the result is stored, the stream holds only what it was queued
    with, when it started and its result (it held 18.9 MB for the 2 hours a stream lives)."""
    done, run_id = run_on_fleet(fleet, hostile("stream", "random_notes(12)"))
    assert done["status"] == "done" and done["result"]["error"] is None, done["result"]["error"]
    _, conn = fleet
    kinds = [protocol.entry_kind(f) for _, f in conn.xrange(protocol.run_key(run_id))]
    assert kinds == ["queued", "started", "result"], kinds
    assert stream_bytes(conn, run_id) < 1 << 20


def test_a_runs_records_on_the_stream_are_capped(fleet):
    """24 MB of records, past the slot's 16 MiB `stream_bytes_per_run`: a RecordLimit error
    naming it (each job's own 64 MiB limit was not reached)."""
    done, run_id = run_on_fleet(fleet, hostile("cap", "random_notes(24)"))
    error = done["result"]["error"]
    assert error["type"] == "RecordLimit" and "stream_bytes_per_run" in error["message"], error
    assert stream_bytes(fleet[1], run_id) < 1 << 20


def test_a_full_redis_ends_the_job_with_a_typed_error_and_the_fleet_goes_on(fleet):
    """Redis at its maxmemory (noeviction) refuses a job's records: the job ends as
    BrokerFull (not a stalled slot), its records are dropped, and the next job runs."""
    _, conn = fleet
    assert conn.config_get("maxmemory-policy")["maxmemory-policy"] == "noeviction"
    limit = conn.config_get("maxmemory")["maxmemory"]
    assert int(limit) > 0  # the Redis the suite starts has a memory cap
    conn.config_set("maxmemory", conn.info("memory")["used_memory"] + (4 << 20))
    try:
        done, run_id = run_on_fleet(fleet, hostile("full", "random_notes(12)"), timeout=60)
    finally:
        conn.config_set("maxmemory", limit)
    assert done["result"]["error"]["type"] == "BrokerFull", done["result"]["error"]
    assert stream_bytes(conn, run_id) < 1 << 20
    after, _ = run_on_fleet(fleet, hostile("after", "pass"), timeout=60)
    assert after["status"] == "done" and after["result"]["error"] is None


def test_the_worker_host_warns_about_a_redis_without_a_memory_cap(redis_server):
    import redis as redis_client
    conn = redis_client.Redis.from_url(redis_server.url)
    limit = conn.config_get("maxmemory")["maxmemory"]
    try:
        conn.config_set("maxmemory", 0)
        assert "maxmemory" in protocol.memory_warning(conn)
        conn.config_set("maxmemory", 64 << 20)
        conn.config_set("maxmemory-policy", "allkeys-lru")
        assert "noeviction" in protocol.memory_warning(conn)
        conn.config_set("maxmemory-policy", "noeviction")
        assert protocol.memory_warning(conn) is None
    finally:
        conn.config_set("maxmemory", limit)
