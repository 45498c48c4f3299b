"""The page in headless Chromium against a server set up for a room: with an access token, and
with event streams refused (the page must poll instead). Real waitress, real engine."""

from __future__ import annotations

import threading
import time

import pytest

from app import create_app
from app.serving import make_server

pytest_plugins = ["test_app_fixtures"]

SCRIPT = ("import torch\n\n\ndef f(x):\n    return x.cos() + 1\n\n\n"
          "print(torch.compile(f, backend='eager')(torch.zeros(3)).sum().item())\n")


@pytest.fixture
def serve(worker, tmp_path):
    servers = []

    def start(**config):
        app = create_app({"TESTING": True, "DATA_DIR": str(tmp_path), **config}, workers=[worker])
        app.extensions["torchbolt.runs"].wait_ready()
        server = make_server(app, "127.0.0.1", 0, threads=16)
        threading.Thread(target=server.run, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.effective_port}"
    yield start
    for server in servers:
        server.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 800})
    page = context.new_page()
    page.problems = []
    page.on("pageerror", lambda error: page.problems.append(f"page error: {error}"))
    page.on("console", lambda m: m.type == "error" and page.problems.append(m.text))
    page.set_default_timeout(30_000)
    yield page
    context.close()


def run_script(page, source: str) -> str:
    page.wait_for_selector("body[data-ready]")
    page.click(".cm-content")
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(source)
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#run[data-status=done], #run[data-status=failed]", timeout=60_000)
    return page.get_attribute("#run", "data-status")


def test_token_link_then_the_page_works_on_its_cookie(page, serve):
    base = serve(TOKEN="room-token-123")
    page.goto(base + "/")
    assert "access token" in page.inner_text("body")  # 401 page
    page.goto(base + "/?token=room-token-123")
    assert page.url == base + "/"  # the token left the address bar
    page.problems.clear()  # the 401 page's stylesheet was refused too
    assert run_script(page, SCRIPT + "# token\n") == "done"
    assert "6.0" in page.inner_text(".stdout")
    assert not page.problems
    cookie, = page.context.cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"


def test_page_polls_when_its_event_stream_is_refused(page, serve):
    base = serve(STREAMS_PER_CLIENT=0)  # every event stream gets a 429
    page.goto(base + "/")
    started = time.monotonic()
    assert run_script(page, SCRIPT + "# polled\n") == "done"
    assert time.monotonic() - started < 30
    assert "checking the job every second" in page.inner_text("#toast")
    assert "6.0" in page.inner_text(".stdout")
    assert page.locator(".compile-row .compile-id").all_inner_texts() == ["0/0"]
    # the refused stream is the only complaint in the console
    assert all("429" in p or "EventSource" in p for p in page.problems), page.problems
