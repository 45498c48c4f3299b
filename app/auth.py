"""Access tokens, as Jupyter does it: needed on every request when the app has a `TOKEN`.

`python -m app` sets one whenever it listens beyond loopback (`--token T`, or a random one it
prints as a ready URL `http://HOST:PORT/?token=T`). Opening any page with `?token=T` stores the
token in an HttpOnly, SameSite=Strict cookie and redirects to the same URL without it, so the
token leaves the address bar and the history. Requests then carry the cookie, or
`Authorization: Bearer T` (scripts). Without a valid token: 401, JSON under /api/, a small HTML
page elsewhere (static files included). Tokens are compared in constant time.
"""

from __future__ import annotations

import hmac
from urllib.parse import urlencode

from flask import Flask, current_app, redirect, request

from .errors import ApiError

COOKIE = "torchbolt-token"
COOKIE_MAX_AGE_S = 7 * 24 * 3600
LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def is_loopback(host: str) -> bool:
    return host.strip("[]").lower() in LOOPBACK


def _valid(given: str | None) -> bool:
    expected = current_app.config["TOKEN"]
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def _bearer() -> str | None:
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def _without_token() -> str:
    query = [(k, v) for k, v in request.args.items(multi=True) if k != "token"]
    return request.path + ("?" + urlencode(query) if query else "")


def check():
    if "token" in request.args and not request.path.startswith("/api/"):
        if not _valid(request.args["token"]):
            raise ApiError(401, "this token is not valid here; open the URL the server printed")
        response = redirect(_without_token(), code=303)
        response.set_cookie(COOKIE, request.args["token"], max_age=COOKIE_MAX_AGE_S,
                            httponly=True, samesite="Strict")
        return response
    if _valid(_bearer()) or _valid(request.cookies.get(COOKIE)):
        return None
    raise ApiError(401, "this server needs its access token: open the URL with ?token=... that "
                        "it printed at start (if you just did, from a link, reload this page), "
                        "or send 'Authorization: Bearer TOKEN'",
                   headers={"WWW-Authenticate": "Bearer"})


def register(app: Flask) -> None:
    """Guard every route, static files included, when the app has a TOKEN."""
    if app.config.get("TOKEN"):
        app.before_request(check)
