"""Response hooks: security headers on every response, gzip where the client accepts it; and
`BodyCache`, the bounded cache of expensive response bodies (graph layouts, reports).

The content security policy forbids inline scripts and event handlers, so even a missed escape
cannot run injected markup. `unsafe-eval` is needed by plotly's WebGL traces (regl compiles its
draw calls with `new Function`). Gzip matters on a meetup's Wi-Fi: results and plotly.js shrink
3-10x; compressed static files are kept in memory, keyed by their ETag.
"""

from __future__ import annotations

import gzip
import threading
from collections import OrderedDict

from flask import Flask, Response, request

CSP = ("default-src 'self'; script-src 'self' 'unsafe-eval'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data: blob:; font-src 'self'; connect-src 'self'; worker-src 'self' blob:; "
       "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
COMPRESSIBLE = ("application/json", "text/html", "text/javascript", "text/css", "text/plain")
MIN_SIZE = 1024
_static_cache: dict[str, bytes] = {}


def _gzip(response: Response) -> None:
    if (response.status_code != 200 or response.is_streamed and not response.direct_passthrough
            or response.mimetype not in COMPRESSIBLE or "Content-Encoding" in response.headers
            or "gzip" not in request.headers.get("Accept-Encoding", "")):
        return
    etag = response.headers.get("ETag")
    if etag and etag in _static_cache:
        body = _static_cache[etag]
    else:
        response.direct_passthrough = False
        data = response.get_data()
        if len(data) < MIN_SIZE:
            return
        body = gzip.compress(data, compresslevel=6)
        if etag:
            _static_cache[etag] = body
    response.set_data(body)
    response.headers["Content-Encoding"] = "gzip"
    response.headers["Vary"] = "Accept-Encoding"


class BodyCache:
    """Response bodies (or other values, each put with its size) kept for reuse: least recently
    used out first, `max_bytes` in all."""

    def __init__(self, max_bytes: int):
        self.max_bytes, self.size = max_bytes, 0
        self._bodies: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key) -> bytes | None:
        with self._lock:
            kept = self._bodies.get(key)
            if kept is None:
                return None
            self._bodies.move_to_end(key)
            return kept[0]

    def put(self, key, body, size: int | None = None) -> None:
        size = len(body) if size is None else size
        if size > self.max_bytes:
            return
        with self._lock:
            self._drop(key)
            self._bodies[key] = (body, size)
            self.size += size
            while self.size > self.max_bytes:
                self.size -= self._bodies.popitem(last=False)[1][1]

    def pop(self, key) -> None:
        with self._lock:
            self._drop(key)

    def _drop(self, key) -> None:
        _, size = self._bodies.pop(key, (None, 0))
        self.size -= size


def register(app: Flask) -> None:
    @app.after_request
    def headers(response: Response) -> Response:
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "same-origin"
        _gzip(response)
        return response
