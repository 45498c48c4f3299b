"""Serving decisions for `python -m app`: the waitress server, whether jobs are sandboxed, whether
the chosen address may be served, and the URL to print.

Kept apart from `__main__` so tests build the same server and check the same rules.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from urllib.parse import quote

from waitress import create_server

from .auth import is_loopback

CONNECTION_LIMIT = 1000  # idle connections hold no thread; waitress's default of 100 is low


@dataclass
class SandboxState:
    ok: bool
    reason: str


def sandbox_state() -> SandboxState:
    """The engine's own answer (`compiler_core.sandbox_check()`): can jobs be sandboxed here?"""
    try:
        from compiler_core import sandbox_check
    except ImportError:  # an engine from before the sandbox
        return SandboxState(False, "this engine has no sandbox (no compiler_core.sandbox_check)")
    check = sandbox_check()
    return SandboxState(bool(check.ok), str(check.reason or ""))


def exposure_refusal(host: str, sandbox: SandboxState, unsafe: bool,
                     required: bool = False) -> str | None:
    """Why serving on `host` is refused, or None: beyond loopback (or anywhere when `required`,
    --require-sandbox) only with a sandbox or --unsafe-no-sandbox, since anyone who reaches the
    server runs code on this machine."""
    if sandbox.ok or unsafe:
        return None
    if required:
        return (f"torchbolt: --require-sandbox: refusing to start: jobs cannot be sandboxed on "
                f"this machine ({sandbox.reason}).")
    if is_loopback(host):
        return None
    return (f"torchbolt: refusing to serve on {host}: jobs cannot be sandboxed on this machine "
            f"({sandbox.reason}), so anyone who reaches the server could run any code as this "
            "user. Serve on 127.0.0.1, make the sandbox available, or pass "
            "--unsafe-no-sandbox to accept that.")


def sandbox_line(sandbox: SandboxState, unsafe: bool) -> str:
    if unsafe:
        why = "" if sandbox.ok else f"; it is not available anyway: {sandbox.reason}"
        return f"torchbolt: jobs are NOT sandboxed (--unsafe-no-sandbox{why})"
    if sandbox.ok:
        return "torchbolt: jobs are sandboxed" + (f" ({sandbox.reason})" if sandbox.reason else "")
    return f"torchbolt: jobs are NOT sandboxed: {sandbox.reason} (serving on loopback only)"


def lan_address() -> str:
    """This machine's address on its default route (no packet is sent), else its name."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: only picks the outgoing interface
            return probe.getsockname()[0]
    except OSError:
        return socket.gethostname()


def ready_url(host: str, port: int, token: str | None) -> str:
    shown = lan_address() if host in ("0.0.0.0", "::", "") else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/" + (f"?token={quote(token, safe='')}" if token else "")


def make_server(app, host: str, port: int, threads: int):
    """The waitress server `python -m app` runs (port 0: any free port)."""
    return create_server(app, host=host, port=port, threads=threads, ident="torchbolt",
                         connection_limit=CONNECTION_LIMIT, asyncore_use_poll=True)
