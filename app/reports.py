"""Static reports and TORCH_TRACE logs: the page's "Report" button and "Open a TORCH_TRACE log".

    GET  /api/results/KEY/report.html  -> the stored result as one self-contained HTML file
                                          (the engine's `report_html`, as the CLI writes it)
    POST /api/trace                    multipart files `log` (a TORCH_TRACE folder's files)
                                       -> {"key"}: the log read into a result, stored like a
                                          shared one (open /r/KEY)

An upload is untrusted data: it is capped (TRACE_MAX_BYTES, 64 files) and only parsed as text
and JSON lines (`trace_result`); no code from it runs and no path in it is opened.
"""

from __future__ import annotations

import hashlib
import json

from flask import Blueprint, Response, current_app, jsonify, request

from compiler_core import (MalformedResult, engine_version, placeholder_source, report_html,
                           trace_result)

from .api import expensive_slot, manager, stored
from .errors import ApiError
from .graphview import is_final
from .store import KEY_CHARS

bp = Blueprint("reports", __name__, url_prefix="/api")
MAX_FILES = 64


@bp.get("/results/<key>/report.html")
def report(key: str):
    """A stored result as a report file to download (no recompile). Built once per key, under
    an expensive-request slot (its graphs may take the `layout_seconds` limit to lay out), and
    kept in a cache bounded by bytes while the result is final."""
    cache = current_app.extensions["torchbolt.report_cache"]
    html = cache.get(key)
    if html is None:
        with expensive_slot():
            entry = stored(key)
            html = built_report(entry)
            if is_final(entry["result"]):
                cache.put(key, html)
    return Response(html, mimetype="text/html", headers={
        "Content-Disposition": f'attachment; filename="torchbolt-{key}.html"'})


def built_report(entry: dict) -> bytes:
    try:
        return report_html(entry["source"], entry["options"], entry["result"]).encode("utf-8")
    except MalformedResult as exc:
        raise ApiError(422, f"this result cannot be made a report: {exc}") from None


@bp.post("/trace")
def trace():
    """Read an uploaded TORCH_TRACE log into a result and store it under its content's key."""
    request.max_content_length = current_app.config["TRACE_MAX_BYTES"]
    uploads = request.files.getlist("log")
    if not uploads or len(uploads) > MAX_FILES:
        raise ApiError(400, f"send 1 to {MAX_FILES} log files as the form field 'log'")
    files = {upload.filename or f"log{i}": upload.read().decode("utf-8", errors="replace")
             for i, upload in enumerate(uploads)}
    try:
        result = trace_result(files)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ApiError(400, f"not a TORCH_TRACE log: {exc}") from None
    digest = hashlib.sha256(json.dumps([sorted(files.items()), engine_version()]).encode())
    key = digest.hexdigest()[:KEY_CHARS]
    source = placeholder_source(result, "Uploaded through the page.")
    manager().store.put(key, source, {}, result)
    return jsonify({"ok": True, "key": key})
