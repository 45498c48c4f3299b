"""Only this machine's own pages talk to the server, as Jupyter Server checks them.

DNS rebinding: any web page can point a name of its own (attacker.example) at 127.0.0.1 and then
talk to a loopback server as a same-origin page. A server without a TOKEN (loopback only) hence
answers only requests whose `Host` is one of its loopback names (or config ALLOWED_HOSTS); with a
token, the token is the guard (a room reaches the server by its LAN address).

Every state-changing request (not GET/HEAD/OPTIONS) from a browser must come from this server's
own page, token or not: `Sec-Fetch-Site` cross-site, `Origin: null` (a sandboxed frame, a file) or
an `Origin` whose host differs from `Host` is refused. Requests with neither header (curl,
scripts) pass: browsers always send them on such requests.

A GET that costs the server seconds (a graph layout, a report, a whole result) is refused too
when another site's page makes it without navigating: an `<img>` or `fetch()` of another site
(`Sec-Fetch-Site` cross-site or same-site, `Sec-Fetch-Mode` not navigate; or an `Origin` that is
not this server) cannot read the answer, so it could only spend the server's CPU. A link from
another site still opens (a navigation).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from flask import Flask, current_app, request

from .auth import LOOPBACK
from .errors import ApiError

SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
EXPENSIVE_GET = re.compile(r"/api/results/[^/]+(/graph|/report\.html)?|/api/jobs/[^/]+")


def host_name(host: str) -> str:
    """The name of a `Host` value without its port: "[::1]:8000" -> "::1"."""
    if host.startswith("["):
        return host[1:].partition("]")[0].lower()
    return host.rpartition(":")[0].lower() if host.count(":") == 1 else host.lower()


def check_host() -> None:
    allowed = LOOPBACK | set(current_app.config["ALLOWED_HOSTS"])
    if host_name(request.host) not in allowed:
        raise ApiError(403, f"this server answers only its own pages: Host {request.host!r} is "
                            f"not one of its names ({', '.join(sorted(allowed))}); open "
                            "http://127.0.0.1:PORT/ or start it with --token")


def check_same_origin() -> None:
    site, origin = request.headers.get("Sec-Fetch-Site"), request.headers.get("Origin")
    if request.method in SAFE_METHODS:
        if EXPENSIVE_GET.fullmatch(request.path):
            check_expensive_get(site, origin)
        return
    if site == "cross-site":
        raise ApiError(403, "cross-site request refused: only this server's own page may "
                            "submit, cancel or upload")
    if origin is not None and (origin == "null" or urlsplit(origin).netloc.lower()
                               != request.host.lower()):
        raise ApiError(403, f"cross-site request refused: Origin {origin!r} is not this "
                            f"server ({request.host})")


def check_expensive_get(site: str | None, origin: str | None) -> None:
    foreign_site = site in ("cross-site", "same-site") \
        and request.headers.get("Sec-Fetch-Mode") != "navigate"
    if foreign_site or origin is not None and urlsplit(origin).netloc.lower() \
            != request.host.lower():
        raise ApiError(403, "cross-site request refused: another site's page may not ask this "
                            "server for graph layouts, reports or whole results (open the "
                            "link instead)")


def register(app: Flask) -> None:
    if not app.config.get("TOKEN"):
        app.before_request(check_host)
    app.before_request(check_same_origin)
