"""Static reports and TORCH_TRACE logs: the page's "Report" button and "Open a TORCH_TRACE log".

    GET  /api/results/KEY/report.html  -> the stored result as one self-contained HTML file
                                          (the engine's `report_html`, as the CLI writes it)
    POST /api/trace                    multipart files `log` (a TORCH_TRACE folder's files)
                                       -> {"key"}: the log read into a result, stored like a
                                          shared one (open /r/KEY)

An upload is untrusted data: it is capped (TRACE_MAX_BYTES, the `trace_upload_bytes` limit, 64
files), streamed to a private temporary folder and read as text and JSON lines in a helper
process with a time and memory budget (`read_trace_folder`, the `parse_seconds` limit), at most
two at once; no code from it runs and no path in it is opened.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading

from flask import Blueprint, Response, current_app, jsonify, request

from compiler_core import (MalformedResult, TraceError, engine_version, placeholder_source,
                           read_trace_folder, report_html)

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


PARSES = threading.BoundedSemaphore(2)  # uploads read at once, each in a process of its own


def save_uploads(uploads, folder: str) -> tuple[dict[str, str], str]:
    """Stream each upload to a file of `folder`: ({file: name shown}, the content's key)."""
    names, digest = {}, hashlib.sha256(json.dumps(engine_version()).encode())
    for i, upload in enumerate(uploads):
        file, shown = f"log{i:02d}", (upload.filename or f"log{i}")[:200]
        upload.save(os.path.join(folder, file))
        names[file] = shown
        content = hashlib.sha256()
        with open(os.path.join(folder, file), "rb") as fh:
            while chunk := fh.read(1 << 20):
                content.update(chunk)
        digest.update(json.dumps([shown, content.hexdigest()]).encode())
    return names, digest.hexdigest()[:KEY_CHARS]


@bp.post("/trace")
def trace():
    """Read an uploaded TORCH_TRACE log into a result and store it under its content's key."""
    request.max_content_length = current_app.config["TRACE_MAX_BYTES"]
    uploads = request.files.getlist("log")
    if not uploads or len(uploads) > MAX_FILES:
        raise ApiError(400, f"send 1 to {MAX_FILES} log files as the form field 'log'")
    if not PARSES.acquire(blocking=False):
        raise ApiError(429, "the server is reading other uploads; send it again in a few "
                            "seconds", headers={"Retry-After": "5"})
    try:
        with tempfile.TemporaryDirectory(prefix="torchbolt-trace-") as folder:
            names, key = save_uploads(uploads, folder)
            result = read_trace_folder(folder, names)
    except TraceError as exc:
        raise ApiError(400, f"not a TORCH_TRACE log: {exc}") from None
    finally:
        PARSES.release()
    source = placeholder_source(result, "Uploaded through the page.")
    manager().store.put(key, source, {}, result)
    return jsonify({"ok": True, "key": key})
