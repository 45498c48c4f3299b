"""The JSON API: views translate HTTP to the run manager and back, nothing more.

Each submit gets a handle of its own: its id is `handle` in answers (and `job`, the same id, kept
for clients written before), the ID of `/api/jobs/ID`. Identical submits share one run and its
result.

    POST /api/compile              {"source", "options"[, "environment"]}
                                   -> {"handle", "job", "key", "status", "cached"}
    GET  /api/jobs/ID              -> {"status": queued|running|done|failed, "result": {...}}
    GET  /api/jobs/ID?view=index&since=V, /api/jobs/ID/stage, /api/results/KEY/stage
                                   -> the result a stage at a time (app/transport.py)
    GET  /api/jobs/ID/events       -> text/event-stream: status, one `stage` per stage, `done`
    POST /api/jobs/ID/cancel       -> {"status"} (of this handle; the run stops when no one waits)
    GET  /api/results/KEY          -> {"source", "options", "result"} (the share store)
    GET  /api/results/KEY/graph?compile=0/0&stage=dynamo_graph[&collapse=auto|off|N][&expand=[ids]]
    GET  /api/gallery, /api/gallery/SLUG, /api/status
    GET  /api/catalogue             -> stages, options, error kinds, gallery (what the page shows)

Everything a client sends is parsed before anything is held for it (app/validate.py): a bad
header, query or body is a 4xx, never a 500 and never a leaked stream permit.
"""

from __future__ import annotations

import gzip
import io

from flask import Blueprint, Response, current_app, jsonify, request
from werkzeug.wsgi import wrap_file

from compiler_core import catalogue, get_example, limit, list_examples

from .errors import ApiError
from .graphview import (GraphRequest, cached_view, find_compile, parse_collapse, parse_expand,
                        view_body)
from .store import is_key
from .streams import Permit, event_stream
from .transport import handle_index, stage_answer
from .validate import parse_compile_request, parse_last_event_id

bp = Blueprint("api", __name__, url_prefix="/api")


def manager():
    return current_app.extensions["torchbolt.runs"]


def client_id() -> str:
    """Who is asking, for the per-client limits: the peer's address. Deliberately not
    X-Forwarded-For, which any client can write (behind a proxy, every client is the proxy)."""
    return request.remote_addr or "unknown"


def expensive_permit() -> Permit:
    """One of this client's few permits for a request that may take seconds (a graph layout, a
    report): a 429 with Retry-After over the caps (app/streams.py)."""
    return current_app.extensions["torchbolt.heavy"].acquire(client_id())


def find_handle(handle_id: str):
    handle = manager().get(handle_id)
    if handle is None:
        raise ApiError(404, "no such job (jobs are kept for an hour; share links for good)")
    return handle


@bp.post("/compile")
def compile_source():
    """Queue a compile, or answer from the store when the same code ran before."""
    source, options, environment = parse_compile_request()
    current_app.extensions["torchbolt.submits"].take(client_id())  # answers from the store too
    handle = manager().submit(source, options, client_id(), environment)
    return jsonify({"ok": True, **handle.named(), "key": handle.key,
                    "status": handle.status, "cached": handle.cached}), 202


@bp.get("/jobs/<handle_id>")
def job_status(handle_id: str):
    """Status and result (partial while running); `?view=index` its index (app/transport.py).
    The whole result is an expensive request: it may be tens of MB of JSON."""
    handle = find_handle(handle_id)
    if request.args.get("view") == "index":
        return jsonify(handle_index(handle))
    with expensive_permit():
        return jsonify(handle.to_json())


@bp.get("/jobs/<handle_id>/stage")
def job_stage(handle_id: str):
    """One stage of the handle's result so far: `?compile=0/0&stage=output_code`."""
    return jsonify(stage_answer(narrowed(find_handle(handle_id).current_result())))


def narrowed(result) -> dict | None:
    """The result cut to the asked compile (`?compile=`), its stages and kernels of the types
    `stage_part` reads: a stored result may be forged (a 422 when it has no list of compiles)."""
    if result is None:
        return None
    compiled = find_compile(result, request.args.get("compile", ""))
    if compiled is None:
        return {"compiles": []}
    stages, kernels = compiled.get("stages"), compiled.get("kernels")
    return {"compiles": [{**compiled, "stages": stages if isinstance(stages, dict) else {},
                          "kernels": kernels if isinstance(kernels, list) else []}]}


@bp.post("/jobs/<handle_id>/cancel")
def cancel_job(handle_id: str):
    """Stop following a run: this handle ends as Cancelled; the run stops unless others
    submitted the same code and still wait for it."""
    handle = find_handle(handle_id)
    manager().cancel(handle)
    return jsonify({"ok": True, **handle.named(), "status": handle.status})


@bp.get("/jobs/<handle_id>/events")
def job_events(handle_id: str):
    """Server-sent events until `done`; resumes after `Last-Event-ID` on reconnect. Refused
    with a 429 over the open-stream caps (app/streams.py): the client then polls."""
    handle = find_handle(handle_id)
    start = parse_last_event_id(request.headers.get("Last-Event-ID"))  # before a permit is held
    permit = current_app.extensions["torchbolt.streams"].acquire(client_id())
    response = Response(event_stream(handle, start, permit), mimetype="text/event-stream",
                        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    response.call_on_close(permit.release)  # also when the stream never started
    return response


def stored(key: str) -> dict:
    """The stored entry (shared, read-only: app/results.py) or a 404."""
    entry = manager().store.get(key) if is_key(key) else None
    if entry is None:
        raise ApiError(404, "no result under this share key")
    return entry


@bp.get("/results/<key>")
def result(key: str):
    """A stored result with its code and options: one gzipped answer per key, built once
    (app/results.py) under an expensive-request permit and sent from that one copy to every
    connection; without gzip only up to the `plain_answer_bytes` limit (a 406 past it)."""
    with expensive_permit():
        body = manager().store.answer(key) if is_key(key) else None
    if body is None:
        raise ApiError(404, "no result under this share key")
    if "gzip" in request.headers.get("Accept-Encoding", ""):
        return shared_answer(body, {"Content-Encoding": "gzip", "Vary": "Accept-Encoding"})
    size, most = int.from_bytes(body[-4:], "little"), limit("plain_answer_bytes")  # gzip's ISIZE
    if size > most:
        raise ApiError(406, f"this result is {size / 2**20:.1f} MiB of JSON; a whole result "
                            f"over {most / 2**20:g} MiB (the plain_answer_bytes limit) is sent "
                            "gzipped only: ask with Accept-Encoding: gzip (curl --compressed), "
                            "or read it a stage at a time "
                            "(GET /api/results/KEY/stage?compile=&stage=)")
    return Response(gzip.decompress(body), mimetype="application/json")


def shared_answer(body: bytes, headers: dict) -> Response:
    """An answer sent from `body` itself to each connection (waitress's `wsgi.file_wrapper`
    keeps a reference, not a copy, until the client has read it)."""
    return Response(wrap_file(request.environ, io.BytesIO(body)), mimetype="application/json",
                    direct_passthrough=True,
                    headers={"Content-Length": str(len(body)), **headers})


@bp.get("/results/<key>/stage")
def result_stage(key: str):
    """One stage of a stored (or running) result: `?compile=0/0&stage=output_code`."""
    return jsonify(stage_answer(narrowed(manager().result_for(key) if is_key(key) else None)))


@bp.get("/results/<key>/graph")
def result_graph(key: str):
    """Nodes, edges and layout of one graph stage of one compile; cached by the groups it shows
    open, laid out under the client's layout budget (app/graphview.py)."""
    if not is_key(key):
        raise ApiError(404, "no result under this key")
    expand = parse_expand(request.args.get("expand"))
    wanted = GraphRequest(key, request.args.get("compile", ""), request.args.get("stage", ""),
                          parse_collapse(request.args.get("collapse", "auto")),
                          None if expand is None else tuple(expand))
    body = cached_view(wanted)
    if body is None:
        body = view_body(wanted, manager().result_for(key), client_id(), expensive_permit)
    return Response(body, mimetype="application/json")


@bp.get("/gallery")
def gallery():
    """The teaching examples, without their code."""
    return jsonify({"ok": True, "examples": [
        {"slug": e.slug, "title": e.title, "teaches": e.teaches} for e in list_examples()]})


@bp.get("/gallery/<slug>")
def gallery_example(slug: str):
    """One teaching example with its code."""
    try:
        example = get_example(slug)
    except KeyError:
        raise ApiError(404, f"no gallery example {slug!r}") from None
    return jsonify({"ok": True, "slug": example.slug, "title": example.title,
                    "teaches": example.teaches, "source": example.source})


@bp.get("/catalogue")
def engine_catalogue():
    """What the engine offers: stages with their labels, options with their choices, error
    kinds and the gallery; the page builds its menus and controls from it."""
    return jsonify({"ok": True, **catalogue()})


@bp.get("/status")
def status():
    """The environment results are computed in, and every environment a submit may choose
    (`environments`: one per torch/triton/device of the connected workers)."""
    return jsonify({"ok": True, **manager().status()})
