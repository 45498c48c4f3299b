"""Serving decisions for `python -m app`: the waitress server, whether jobs are sandboxed, whether
the chosen address may be served, and the URL to print.

Kept apart from `__main__` so tests build the same server and check the same rules.

What a client's connections cost the server is bounded (the limits of compiler_core/limits.py):
waitress copies each answer into the connection's buffer (spilled to a temporary file past 1 MB)
and keeps it until the client reads it, and closes only idle connections after its
`channel_timeout`; one client that asked for a large answer on 40 connections and never read
held 40 copies. So a client (a peer address) may hold `connections_per_client` connections (the
next is answered 429 and closed), an answer its reader has taken nothing of for
`stalled_send_seconds` is dropped with its connection, and a client's unread answers past
`buffered_bytes_per_client` lose their most stalled connections. Answers shared between
connections (a stored result's gzipped body, sent through `wsgi.file_wrapper`) are sent from
the one copy and count for none of them.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from urllib.parse import quote

from waitress import create_server
from waitress.buffers import ReadOnlyFileBasedBuffer
from waitress.channel import HTTPChannel
from waitress.server import TcpWSGIServer

from compiler_core import limit

from .auth import is_loopback

CONNECTION_LIMIT = 1000  # idle connections hold no thread; waitress's default of 100 is low
CLEANUP_INTERVAL_S = 2  # how often stalled connections are looked for (waitress: 30 s)


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
    server = create_server(app, host=host, port=port, threads=threads, ident="torchbolt",
                           connection_limit=CONNECTION_LIMIT, asyncore_use_poll=True,
                           cleanup_interval=CLEANUP_INTERVAL_S)
    listeners = server.map.values() if hasattr(server, "map") else [server]  # one per address
    for listener in list(listeners):
        if type(listener) is TcpWSGIServer:
            listener.__class__ = BoundedServer
    return server


def client_of(channel) -> str:
    return channel.addr[0] if channel.addr else ""


class BoundedChannel(HTTPChannel):
    """waitress's connection, answered 429 and closed past its client's connection limit."""

    def __init__(self, server, sock, addr, adj, map=None):
        super().__init__(server, sock, addr, adj, map)
        most = limit("connections_per_client")
        if sum(client_of(c) == addr[0] for c in list(server.active_channels.values())) > most:
            self.refuse(f"this client has {most} connections open (the connections_per_client "
                        "limit); close some, or reuse them (a browser needs at most 6)")

    def refuse(self, message: str) -> None:
        body = json.dumps({"ok": False, "error": message, "status": 429}).encode()
        head = (f"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nRetry-After: 5\r\nConnection: close\r\n\r\n")
        with self.outbuf_lock:
            self.outbufs[-1].append(head.encode() + body)
            self.total_outbufs_len += len(head) + len(body)
            self.close_when_flushed = True


class BoundedServer(TcpWSGIServer):
    """waitress's server that also drops stalled answers and caps a client's unread bytes."""

    channel_class = BoundedChannel

    def maintenance(self, now: float) -> None:
        super().maintenance(now)  # idle connections past channel_timeout
        for channel in stalled_or_over(list(self.active_channels.values()), now):
            channel.will_close = True  # the main loop closes it; a task writing to it ends


def copied_bytes(channel) -> int:
    """Unread answer bytes held for this connection alone (a shared file-wrapper body is not)."""
    shared = sum(len(buf) for buf in list(channel.outbufs)
                 if isinstance(buf, ReadOnlyFileBasedBuffer))
    return max(0, channel.total_outbufs_len - shared)


def stalled_or_over(channels: list, now: float) -> list:
    """Connections to close: an answer untouched for `stalled_send_seconds`, and the most
    stalled of a client's connections while its copied unread bytes are over its limit."""
    stall, budget = limit("stalled_send_seconds"), limit("buffered_bytes_per_client")
    pending = [c for c in channels if c.total_outbufs_len and not c.will_close]
    closing = [c for c in pending if now - c.last_activity > stall]
    held: dict[str, int] = {}
    for channel in sorted(pending, key=lambda c: -c.last_activity):  # most recent first
        client = client_of(channel)
        held[client] = held.get(client, 0) + copied_bytes(channel)
        if held[client] > budget and channel not in closing:
            closing.append(channel)
    return closing
