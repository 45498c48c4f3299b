"""Issue 34: what is *around* the sandbox, attacked as a client, a web page or a job would.

1. root never follows a link a job planted in the CLI's build cache (a swap race as root);
2. no run executes what an earlier run of another script wrote into that cache;
3. a stored result answered "cached" costs its client (a submit budget) and holds a key;
4. reads of a large stored result stay bounded in memory and never slow another client;
5. a tokenless server answers only its own pages (Host), and no other site's writes (Origin);
6. the sandbox never silently goes away (Python under /tmp; a clear reason; a refusal flag).
"""

from __future__ import annotations

import glob
import http.client
import json
import os
import shutil
import site
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from app import create_app
from compiler_core import Options
from compiler_core.supervisor import sandbox
from test_app_fixtures import wait_for_handle
from test_cli import ROOT, run_cli

pytest_plugins = ["test_app_fixtures"]
as_root = pytest.mark.skipif(os.getuid() != 0, reason="the privileged cache hand-over is root's")
sandboxed = pytest.mark.skipif(not sandbox.check().ok, reason="needs the sandbox")


# -- 1. root never follows a job's links
@as_root
def test_root_never_follows_a_link_swapped_into_the_cli_cache(tmp_path):
    """A job of another CLI run swaps a folder of the shared cache for a link to a host folder
    while the next run prepares the cache as root: no host file may change owner."""
    victim_dir = tmp_path / "host"
    victim_dir.mkdir()
    victim = victim_dir / "secret"
    victim.write_text("root's")
    cache = tmp_path / "cache"
    sandbox.prepare_cache_dir(str(cache), True)
    swapped = cache / "swap"
    stop = threading.Event()

    def attacker():
        while not stop.is_set():
            try:
                swapped.mkdir()
                (swapped / "secret").write_text("x")
                shutil.rmtree(swapped)
                swapped.symlink_to(victim_dir)
                swapped.unlink()
            except OSError:
                pass

    thread = threading.Thread(target=attacker, daemon=True)
    thread.start()
    try:
        for _ in range(300):
            sandbox.prepare_cache_dir(str(cache), True)
    finally:
        stop.set()
        thread.join()
    assert victim.stat().st_uid == 0 and victim_dir.stat().st_uid == 0


@as_root
def test_a_cache_folder_of_another_owner_is_replaced_not_walked(tmp_path, monkeypatch):
    """The cache is handed to the sandbox's user once, when created; one whose owner is not
    the jobs' user (an older layout, an unsandboxed run's) is moved aside whole, never chowned
    entry by entry as root."""
    cache = tmp_path / "cache"
    (cache / "inductor-cache" / "ab").mkdir(parents=True)
    (cache / "inductor-cache" / "ab" / "wrapper.py").write_text("planted = True\n")
    chowned = []
    monkeypatch.setattr(os, "lchown", lambda *a, **k: chowned.append(a))
    prepared = sandbox.prepare_cache_dir(str(cache), True)
    assert len(chowned) <= 1 and not (cache / "inductor-cache").exists()
    assert os.stat(prepared).st_uid == sandbox.NOBODY or chowned


# -- 2. no run executes what an earlier run planted
PLANT = """import os, torch
f = torch.compile(lambda x: x.sin() * 2)
print(f(torch.ones(3)).sum().item() > 0)
for root, _, files in os.walk(os.environ["TORCHINDUCTOR_CACHE_DIR"]):
    for name in files:
        if name.endswith(".py"):
            with open(os.path.join(root, name), "a") as fh:
                fh.write("\\nprint('PLANTED BY AN EARLIER JOB')\\n")
print("planted")
"""
VICTIM = """import torch
f = torch.compile(lambda x: x.sin() * 2)
print(f(torch.ones(3)).sum().item() > 0, "a different script")
"""


def test_a_later_script_never_runs_what_an_earlier_job_planted(tmp_path, cli_cache_home):
    planter, planted = run_cli(tmp_path, PLANT, "--no-measure", "--no-views",
                               cache_home=cli_cache_home)
    assert planter.returncode == 0 and "planted" in planted["stdout"], planter.stderr
    victim, result = run_cli(tmp_path, VICTIM, "--no-measure", "--no-views",
                             cache_home=cli_cache_home)
    assert victim.returncode == 0, victim.stderr
    assert "PLANTED" not in result["stdout"] + result["stderr"]
    assert "PLANTED" not in result["compiles"][0]["stages"]["output_code"]["text"]


TAMPER_HEADER = """import os, torch
f = torch.compile(lambda x: x.cos() + 1)
print(f(torch.ones(3)).sum().item() > 0)
for root, _, files in os.walk("/tmp"):
    for name in files:
        try:
            with open(os.path.join(root, name), "ab") as fh:
                fh.write(b"\\n#error planted\\n")
        except OSError:
            pass
print("tampered")
"""


@sandboxed
def test_no_job_changes_the_header_every_script_shares(tmp_path, cli_cache_home):
    """The precompiled header is the one cache all scripts share: a job that appends to every
    file it sees under /tmp changes only its own overlay, never the kept header."""
    run_cli(tmp_path, VICTIM, "--no-measure", "--no-views", cache_home=cli_cache_home)
    header = cli_cache_home / "torchbolt" / "build" / "header"
    kept = {p: p.read_bytes() for p in header.rglob("*") if p.is_file()}
    assert any(p.suffix == ".gch" for p in kept), sorted(kept)[:5]
    proc, result = run_cli(tmp_path, TAMPER_HEADER, "--no-measure", "--no-views",
                           cache_home=cli_cache_home)
    assert proc.returncode == 0 and "tampered" in result["stdout"], proc.stderr
    assert {p: p.read_bytes() for p in header.rglob("*") if p.is_file()} == kept


def test_pruning_keeps_recent_scripts_and_those_a_run_holds(tmp_path):
    """Old script folders go, least recently run first; a folder a run holds stays."""
    from compiler_core.supervisor.buildcache import BuildCache
    caches = [BuildCache(str(tmp_path / "build"), f"print({i})\n") for i in range(4)]
    for age, cache in enumerate(caches):
        cache.attach(False)
        os.utime(os.path.join(cache.scripts, f"{cache.key}.lock"), (age, age))
        if age:
            cache.release()  # prunes with the default: all four stay
    held, oldest_free = caches[0], caches[1]
    caches[3].prune(keep=1)
    left = sorted(os.listdir(held.scripts))
    assert held.key in left and caches[3].key in left, left
    assert oldest_free.key not in left and caches[2].key not in left, left
    held.release()


# -- 3. every handle costs its client; 4. reads are bounded
BIG_TEXT_CHARS = 3_000_000


def big_result(result: dict) -> dict:
    """`result` with one stage text of 3 M characters per compile (a large model's size)."""
    big = json.loads(json.dumps(result))
    for compiled in big["compiles"]:
        stage = compiled["stages"]["dynamo_graph"]
        lines = [f"    v{i} = torch.ops.aten.add(v{i - 1}, {i})  # line {i}" for i in range(60000)]
        stage["text"] = "\n".join(lines)[:BIG_TEXT_CHARS]
        stage["src_lines"] = [None] * (stage["text"].count("\n") + 1)
    return big


@pytest.fixture(scope="module")
def limited_app(worker, tmp_path_factory):
    """An app with the default per-client limits (the session app raises its submit budget)."""
    app = create_app({"TESTING": True, "DATA_DIR": str(tmp_path_factory.mktemp("trust")),
                      "WARM_FIRST_LESSON": False}, workers=[worker])
    app.extensions["torchbolt.runs"].wait_ready()
    return app


@pytest.fixture(scope="module")
def stored_big(limited_app):
    """(source, key) of a submit whose stored result is large."""
    client = limited_app.test_client()
    source = "import torch\ntorch.compile(lambda x: x * 3)(torch.ones(2))\n"
    job = client.post("/api/compile", json={"source": source, "options": {"measure": False}},
                      environ_base={"REMOTE_ADDR": "10.9.9.9"}).get_json()
    done = wait_for_handle(client, job["handle"])
    manager = limited_app.extensions["torchbolt.runs"]
    manager.store.put(done["key"], source, Options(measure=False).to_dict(),
                      big_result(done["result"]))  # replaces what the server had cached
    return source, done["key"]


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:")) / 1024


def test_cached_answers_count_toward_their_clients_budget(limited_app, stored_big):
    """Fifteen resubmits of a large stored result from one client: the budget stops the burst
    with a 429 naming the rule, another client still gets its answer, and no handle holds a copy
    of the result."""
    source, key = stored_big
    client = limited_app.test_client()
    manager = limited_app.extensions["torchbolt.runs"]
    answers = [client.post("/api/compile", json={"source": source, "options": {"measure": False}},
                           environ_base={"REMOTE_ADDR": "10.0.0.3"}) for _ in range(15)]
    codes = [a.status_code for a in answers]
    assert codes.count(202) < 15 and set(codes) == {202, 429}, codes
    refused = next(a for a in answers if a.status_code == 429).get_json()
    assert "submits" in refused["error"] and "per client" in refused["error"]
    assert all(a.get_json()["cached"] for a in answers if a.status_code == 202)
    other = client.post("/api/compile", json={"source": source, "options": {"measure": False}},
                        environ_base={"REMOTE_ADDR": "10.0.0.4"})
    assert other.status_code == 202 and other.get_json()["cached"]
    for answer in answers + [other]:
        if answer.status_code == 202:
            handle = manager.get(answer.get_json()["handle"])
            assert handle.run.result is None and handle.run.key == key  # a key, not a copy
            assert handle.run.source == ""
    job = client.get(f"/api/jobs/{other.get_json()['handle']}").get_json()
    assert len(job["result"]["compiles"][0]["stages"]["dynamo_graph"]["text"]) == BIG_TEXT_CHARS


def test_parallel_reads_of_a_large_result_stay_bounded(limited_app, stored_big):
    """Eight loops of GET on one large stored result (whole, its index and a stage) from two
    addresses: the server's memory grows by less than 400 MB and another client's
    /api/status answers within 1.5 s throughout; refused reads are 429s naming the limit."""
    from waitress import create_server
    _, key = stored_big
    server = create_server(limited_app, host="127.0.0.1", port=0, threads=16)
    threading.Thread(target=server.run, daemon=True).start()
    port = server.effective_port
    paths = [f"/api/results/{key}", f"/api/results/{key}/stage?compile=0/0&stage=dynamo_graph"]
    codes, stop = [], threading.Event()
    before = rss_mb()

    def reader(index: int):
        while not stop.is_set():
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60,
                                              source_address=(f"127.0.0.{1 + index % 2}", 0))
            conn.request("GET", paths[index % len(paths)], headers={"Accept-Encoding": "gzip"})
            response = conn.getresponse()
            body = response.read()
            codes.append(response.status)
            if response.status == 429:
                assert b"per client" in body or b"its limit" in body
            conn.close()

    threads = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(8)]
    for thread in threads:
        thread.start()
    latencies, peak = [], before
    deadline = time.monotonic() + 12
    while time.monotonic() < deadline:
        started = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30,
                                          source_address=("127.0.0.9", 0))
        conn.request("GET", "/api/status")
        assert conn.getresponse().status == 200
        conn.close()
        latencies.append(time.monotonic() - started)
        peak = max(peak, rss_mb())
        time.sleep(0.1)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    server.close()
    assert codes.count(200) >= 8 and set(codes) <= {200, 429}, codes[:20]
    assert max(latencies) < 1.5, sorted(latencies)[-5:]
    assert peak - before < 400, (before, peak)


def test_a_client_with_two_addresses_cannot_hold_every_heavy_slot(limited_app):
    heavy = limited_app.extensions["torchbolt.heavy"]
    held = []
    for address in ("127.0.0.1", "127.0.0.2"):
        for _ in range(heavy.per_client):
            held.append(heavy.acquire(address))
    try:
        third = heavy.acquire("192.168.7.7")  # another attendee's layout or read
        third.release()
    finally:
        for slot in held:
            slot.release()


# -- 5. only this machine's pages talk to a tokenless server
@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:8000",
                                  "127.0.0.1.nip.io:8000", "192.168.1.20:8000"])
def test_a_tokenless_server_refuses_a_foreign_host(client, host):
    """DNS rebinding: a page of attacker.example whose name now points at 127.0.0.1."""
    for path in ("/", "/api/status", "/api/gallery"):
        response = client.get(path, headers={"Host": host})
        assert response.status_code == 403, (path, response.status_code)
        assert "Host" in response.get_data(as_text=True)
    refused = client.post("/api/compile", headers={"Host": host},
                          json={"source": "print(1)", "options": {}})
    assert refused.status_code == 403


@pytest.mark.parametrize("host", ["localhost", "localhost:8000", "127.0.0.1:5000", "[::1]:8000"])
def test_a_tokenless_server_answers_its_own_names(client, host):
    assert client.get("/api/status", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize("headers", [
    {"Origin": "https://attacker.example"},
    {"Origin": "null"},
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site", "Origin": "http://evil.localhost"},
])
def test_a_cross_site_write_is_refused(client, headers):
    """Another site's form or fetch may not upload a trace, submit or cancel."""
    upload = client.post("/api/trace", headers=headers, content_type="multipart/form-data",
                         data={"log": (open(os.devnull, "rb"), "dedicated_log_torch_trace.log")})
    assert upload.status_code == 403 and "cross-site" in upload.get_json()["error"]
    submit = client.post("/api/compile", headers=headers,
                         json={"source": "print(1)", "options": {}})
    assert submit.status_code == 403


def test_this_pages_own_writes_pass(client):
    same = {"Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"}
    response = client.post("/api/compile", headers=same, json={"source": "x = (", "options": {}})
    assert response.status_code in (202, 400), response.get_json()
    assert client.post("/api/jobs/nope/cancel", headers=same).status_code == 404


def test_a_server_with_a_token_serves_any_host_name(worker, tmp_path):
    """Beyond loopback the token is the guard (the room reaches it by its LAN address)."""
    app = create_app({"TESTING": True, "DATA_DIR": str(tmp_path), "TOKEN": "t0k",
                      "WARM_FIRST_LESSON": False, "WORKERS": 0}, workers=[])
    answer = app.test_client().get("/api/status", headers={"Host": "192.168.1.20:8000",
                                                           "Authorization": "Bearer t0k"})
    assert answer.status_code == 200


# -- 6. the sandbox never silently goes away
@sandboxed
def see_these_packages(venv: str, site_dirs: list) -> None:
    """Let the venv import this interpreter's packages (torch among them) through a .pth file.
    Not `--system-site-packages`: that shows the *base* interpreter's packages, which on a fresh
    machine hold no torch (it passed only where the system Python had torch)."""
    ours = glob.glob(os.path.join(venv, "lib", "python3*", "site-packages"))[0]
    with open(os.path.join(ours, "torchbolt-project-venv.pth"), "w") as f:
        f.write("\n".join(site_dirs) + "\n")


def test_the_sandbox_holds_with_python_in_a_venv_under_tmp(tmp_path):
    """A checkout under /tmp with its venv: the job's private /tmp must not hide the
    interpreter, and a job runs sandboxed there."""
    venv = tempfile.mkdtemp(prefix="torchbolt-venv-", dir="/tmp")
    os.chmod(venv, 0o755)  # as a checkout's folder is (mkdtemp's 0700 would shut out uid 65534)
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv],
                       check=True, timeout=120)
        see_these_packages(venv, site.getsitepackages())
        code = ("from compiler_core import Worker, Options\n"
                "w = Worker(warm=False).start(); w.wait_ready()\n"
                "r = w.run('import sys, os\\nprint(sys.executable, os.getuid())\\n', "
                "Options(device='cpu', measure=False))\n"
                "print('SANDBOXED', w.sandboxed, r['stdout'].strip())\n"
                "w.close()\n")
        done = subprocess.run([os.path.join(venv, "bin", "python"), "-c", code], cwd=ROOT,
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": ROOT})
        assert done.returncode == 0, done.stderr[-2000:]
        line = next(l for l in done.stdout.splitlines() if l.startswith("SANDBOXED"))
        assert line.split()[1:] == ["True", f"{venv}/bin/python", str(sandbox.NOBODY)], line
    finally:
        shutil.rmtree(venv, ignore_errors=True)


@sandboxed
def test_the_checks_reason_names_an_unreachable_interpreter(tmp_path):
    """An interpreter the sandbox cannot reach is named as such, not blamed on the kernel."""
    hidden = tempfile.mkdtemp(prefix="torchbolt-py-", dir="/var/tmp")
    try:
        os.symlink(os.path.realpath(sys.executable), os.path.join(hidden, "python3"))
        code = ("import sys; sys.executable = sys.argv[1]\n"
                "from compiler_core.supervisor import sandbox\n"
                "print(sandbox.check().reason)\n")
        done = subprocess.run([sys.executable, "-c", code, os.path.join(hidden, "python3")],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "interpreter" in done.stdout and hidden in done.stdout, done.stdout
        assert "kernel" not in done.stdout
    finally:
        shutil.rmtree(hidden, ignore_errors=True)


def without_bwrap(tmp_path) -> dict:
    """An environment whose PATH has every tool but bwrap: the sandbox is missing."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        for name in os.listdir(folder) if os.path.isdir(folder) else []:
            if name != "bwrap" and not (bin_dir / name).exists():
                (bin_dir / name).symlink_to(os.path.join(folder, name))
    return {**os.environ, "PATH": str(bin_dir)}


def test_serve_can_refuse_to_start_without_the_sandbox_even_on_loopback(tmp_path):
    done = subprocess.run([sys.executable, "-m", "app", "--host", "127.0.0.1", "--port", "0",
                           "--data-dir", str(tmp_path / "var"), "--require-sandbox"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env=without_bwrap(tmp_path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--require-sandbox" in done.stderr and "bubblewrap" in done.stderr


def test_the_cli_says_when_its_job_is_not_sandboxed_and_can_refuse(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print('hi')\n")
    env = {**without_bwrap(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    refused = subprocess.run([sys.executable, "-m", "compiler_core", "run", str(script),
                              "--require-sandbox", "--no-measure"], cwd=ROOT,
                             capture_output=True, text=True, timeout=120, env=env)
    assert refused.returncode == 2 and "bubblewrap" in refused.stderr, refused.stderr
    warned = subprocess.run([sys.executable, "-m", "compiler_core", "run", str(script),
                             "--no-measure"], cwd=ROOT, capture_output=True, text=True,
                            timeout=300, env=env)
    assert warned.returncode == 1 and "NoCompile" in warned.stderr, warned.stderr  # it ran
    assert "NOT sandboxed" in warned.stderr and "bubblewrap" in warned.stderr, warned.stderr


def test_a_worker_whose_process_cannot_start_says_why_at_once(tmp_path, monkeypatch):
    """A zygote that exits before it is ready (here its Python cannot import the engine) is a
    WorkerError within seconds naming the cause from its log, not a wait for the 300 s limit
    (seen on a GPU host whose packages lay on a PYTHONPATH the job's clean environment drops)."""
    from compiler_core import Worker
    from compiler_core.supervisor.worker import WorkerError
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named jsonschema' >&2\nexit 1\n")
    fake.chmod(0o755)
    sandbox.check()  # cached with the real interpreter before it is swapped
    monkeypatch.setattr(sys, "executable", str(fake))
    worker = Worker(sandbox=False, warm=False).start()
    started = time.monotonic()
    try:
        with pytest.raises(WorkerError) as error:
            worker.wait_ready()
    finally:
        worker.close()
    assert time.monotonic() - started < 10
    assert "exit code 1" in str(error.value) and "jsonschema" in str(error.value)
