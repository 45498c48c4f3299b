"""One error type and one JSON shape for every API error: `{"ok": false, "error", "status"}`.

Pages get the same message in a minimal HTML page. No user input can cause a 500: views validate
with `ApiError`, and the catch-all handler below turns anything unexpected into a logged 500
whose message names no internals.
"""

from __future__ import annotations

from flask import Flask, current_app, jsonify, render_template, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from compiler_core import BrokerDown


class ApiError(Exception):
    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


def _respond(status: int, message: str, headers: dict | None = None):
    if request.path.startswith("/api/"):
        return jsonify({"ok": False, "error": message, "status": status}), status, headers or {}
    return (render_template("error.html", status=status, message=message), status,
            headers or {})


def body_limit_message() -> str:
    """Werkzeug's 413 names no limit: say which one this request was over."""
    limit = request.max_content_length
    if limit is None:
        return "the request body is larger than this server accepts"
    return (f"the request body is larger than this server's limit for {request.path} "
            f"({limit:,} bytes, {limit / 2**20:g} MiB)")


def register(app: Flask) -> None:
    @app.errorhandler(ApiError)
    def api_error(exc: ApiError):
        return _respond(exc.status, exc.message, exc.headers)

    @app.errorhandler(BrokerDown)
    def broker_down(exc: BrokerDown):
        return _respond(503, f"{exc}; results this server has seen are still served; try "
                             "again shortly", {"Retry-After": "5"})

    @app.errorhandler(RequestEntityTooLarge)
    def body_too_large(exc: RequestEntityTooLarge):
        return _respond(413, body_limit_message())

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        return _respond(exc.code or 500, exc.description or exc.name)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception):
        current_app.logger.exception("unexpected error on %s", request.path)
        return _respond(500, "internal error; the server log has the details")
