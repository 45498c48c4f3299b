"""Session fixtures for the web layer's tests (a pytest plugin: `pytest_plugins` names it).

One app over the engine tests' warm `worker` (tests/conftest.py), one share store for the
session, each distinct compile run once (`compiled`), a live waitress server and one headless
Chromium for the browser tests.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from app import create_app

CHROMIUM = "/usr/bin/chromium"  # Debian's package; CI installs it, so there it must be present
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="session")
def app(worker, tmp_path_factory):
    # Many tests lay out graphs and upload logs from one address, as they submit (SUBMIT_BURST
    # below): the per-client budgets of compiler_core/limits.py are raised for the session
    # (tests/test_hostile_http_cost.py sets them back where it tests them).
    for name in ("LAYOUT_SECONDS_PER_CLIENT", "UPLOAD_STORE_BYTES"):
        os.environ.setdefault(f"TORCHBOLT_LIMIT_{name}", str(10**12))
    app = create_app({"TESTING": True, "DATA_DIR": str(tmp_path_factory.mktemp("store")),
                      "WARM_FIRST_LESSON": False,  # tests that need it warm it themselves
                      "SUBMIT_BURST": 10_000,  # many tests submit from one address
                      "MAX_TIMEOUT": LOAD_PROOF_TIMEOUT_S},
                     workers=[worker])
    app.extensions["torchbolt.runs"].wait_ready()
    return app


@pytest.fixture(scope="session")
def client(app):
    return app.test_client()


# A job's time limit in the API tests: the engine's 120 s default was seen running out for a
# 2-layer encoder fw+bw at load 4-7 on 2 cores; the tests check the transport, not that limit.
LOAD_PROOF_TIMEOUT_S = 600.0


def outcome(data: dict) -> str:
    """A job's status and, when it failed, why (its error's kind and message), for asserts."""
    error = (data.get("result") or {}).get("error") or {}
    return data["status"] if not error else f"{data['status']}: {error}"


def wait_for_handle(client, handle_id: str, timeout: float = LOAD_PROOF_TIMEOUT_S) -> dict:
    """The answer about a submit (GET /api/jobs/ID) once its run ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data = client.get(f"/api/jobs/{handle_id}").get_json()
        if data["status"] in ("done", "failed"):
            return data
        time.sleep(0.05)
    raise AssertionError(f"the run of handle {handle_id} did not finish in {timeout} s")


class Compiler:
    """Submits through the API and remembers each finished job by (source, options)."""

    def __init__(self, client):
        self.client = client
        self.jobs: dict[str, dict] = {}

    def __call__(self, source: str, **options) -> dict:
        key = repr((source, sorted(options.items())))
        if key not in self.jobs:
            deadline = time.monotonic() + 120
            while True:  # a browser test's runs (same client address) may hold both slots
                response = self.client.post("/api/compile",
                                            json={"source": source, "options": options})
                if response.status_code != 429 or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert response.status_code == 202, response.get_json()
            self.jobs[key] = wait_for_handle(self.client, response.get_json()["handle"])
        return self.jobs[key]


@pytest.fixture(scope="session")
def compiled(client):
    return Compiler(client)


@pytest.fixture(scope="session")
def live_server(app):
    from waitress import create_server
    server = create_server(app, host="127.0.0.1", port=0, threads=16)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.effective_port}"
    server.close()


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM) and not os.environ.get("CI"):
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
