"""Static reports and TORCH_TRACE logs: the page's "Report" button and "Open a TORCH_TRACE log".

    GET  /api/results/KEY/report.html  -> the stored result as one self-contained HTML file
                                          (the engine's `report_html`, as the CLI writes it)
    POST /api/trace                    multipart files `log` (a TORCH_TRACE folder's files)
                                       -> {"key"}: the log read into a result, stored like a
                                          shared one (open /r/KEY)

An upload is untrusted data: it is capped (the `trace_upload_bytes` limit, 64 files), streamed
to a private temporary folder and read as text and JSON lines in a helper process with a time
and memory budget (`read_trace_folder`, the `parse_seconds` limit), which answers with the
result's stored form: the server stores it as it is, never expanded. At most two are read at
once and one per client, waiting clients served in turn (`ParseSlots`); no code from it runs
and no path in it is opened. An upload costs its client a submit (app/budget.py) and the
bytes it adds to the store (the `upload_store_bytes` limit, refilled hourly).
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import os
import tempfile
import threading

from flask import Blueprint, Response, current_app, jsonify, request

from compiler_core import (MalformedResult, TraceError, engine_version, placeholder_source,
                           limit, read_trace_folder, report_html)

from .api import client_id, expensive_permit, manager, stored
from .errors import ApiError
from .graphview import is_final
from .store import KEY_CHARS

bp = Blueprint("reports", __name__, url_prefix="/api")
MAX_FILES = 64


@bp.get("/results/<key>/report.html")
def report(key: str):
    """A stored result as a report file to download (no recompile). Built once per key, under
    an expensive-request permit and the client's layout budget (its graphs may take the
    `layout_seconds` limit each to lay out), and
    kept in a cache bounded by bytes while the result is final."""
    cache = current_app.extensions["torchbolt.report_cache"]
    html = cache.get(key)
    if html is None:
        layouts = current_app.extensions["torchbolt.layouts"]
        with layouts.spending_seconds(client_id()), expensive_permit():
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


class ParseSlots:
    """Uploads read at once (`total`, each in a process of its own), one per client, and the
    clients waiting for a slot served in the order they came (at most `waiting` of them, each
    holding a server thread, for at most `wait_s`); past that a 429."""

    def __init__(self, total: int = 2, waiting: int = 8):
        self.total, self.waiting = total, waiting
        self._reading: set[str] = set()
        self._queue: collections.deque[str] = collections.deque()
        self._turn = threading.Condition()

    @contextlib.contextmanager
    def held(self, client: str, wait_s: float):
        with self._turn:
            if client in self._reading or client in self._queue:
                raise ApiError(429, "this client's other upload is being read: the server reads "
                                    "one upload at a time per client; send this one when it "
                                    "is done", headers={"Retry-After": "5"})
            if len(self._queue) >= self.waiting:
                raise ApiError(429, f"the server is reading {self.total} uploads and "
                                    f"{len(self._queue)} wait; send it again in a few seconds",
                               headers={"Retry-After": "5"})
            self._queue.append(client)
            came = self._turn.wait_for(lambda: self._queue[0] == client
                                       and len(self._reading) < self.total, wait_s)
            self._queue.remove(client)
            if not came:
                self._turn.notify_all()
                raise ApiError(429, "the server is still reading other uploads; send it again "
                                    "in a few seconds", headers={"Retry-After": "5"})
            self._reading.add(client)
            self._turn.notify_all()  # the next in line may take the other slot
        try:
            yield
        finally:
            with self._turn:
                self._reading.discard(client)
                self._turn.notify_all()


PARSES = ParseSlots()


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
    request.max_content_length = limit("trace_upload_bytes")
    uploads = request.files.getlist("log")
    if not uploads or len(uploads) > MAX_FILES:
        raise ApiError(400, f"send 1 to {MAX_FILES} log files as the form field 'log'")
    client, quota = client_id(), current_app.extensions["torchbolt.uploads"]
    current_app.extensions["torchbolt.submits"].take(client)  # an upload is a submit too
    quota.take(client, 1)  # a byte of its store quota left at least; the rest once stored
    try:
        with PARSES.held(client, 2 * limit("parse_seconds")), \
                tempfile.TemporaryDirectory(prefix="torchbolt-trace-") as folder:
            names, key = save_uploads(uploads, folder)
            named, result = read_trace_folder(folder, names)
    except TraceError as exc:
        raise ApiError(400, f"not a TORCH_TRACE log: {exc}") from None
    source = placeholder_source(named, "Uploaded through the page.")
    store = manager().store
    store.put(key, source, {}, result)
    quota.charge(client, store.stored_bytes(key) - 1)
    return jsonify({"ok": True, "key": key})


def upload_settings() -> tuple[float, float]:
    most = limit("upload_store_bytes")
    return most, most / 3600.0


def upload_refusal(wait: int) -> str:
    most = limit("upload_store_bytes")
    return (f"this client's uploads added their share to the store (the upload_store_bytes "
            f"limit: {most / 2**20:g} MiB at once, then {most / 2**20:g} MiB an hour); try "
            f"again in {wait} s")
