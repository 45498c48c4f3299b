"""The JSON API: views translate HTTP to the job manager and back, nothing more.

    POST /api/compile              {"source", "options"} -> {"job", "key", "status", "cached"}
    GET  /api/jobs/ID              -> {"status": queued|running|done|failed, "result": {...}}
    GET  /api/jobs/ID/events       -> text/event-stream: status, one `stage` per stage, `done`
    POST /api/jobs/ID/cancel       -> {"status"}
    GET  /api/results/KEY          -> {"source", "options", "result"} (the share store)
    GET  /api/results/KEY/graph?compile=0/0&stage=dynamo_graph[&collapse=auto|off|N]
    GET  /api/gallery, /api/gallery/SLUG, /api/status
"""

from __future__ import annotations

import json

from flask import Blueprint, Response, current_app, jsonify, request

from compiler_core import Options, OptionsError
from compiler_core.gallery import get_example, list_examples

from .errors import ApiError
from .graphview import graph_view, parse_collapse
from .store import is_key

bp = Blueprint("api", __name__, url_prefix="/api")

MAX_SOURCE_CHARS = 100_000
USER_OPTIONS = {"device": str, "mode": str, "dynamic": str, "fullgraph": bool,
                "gpu_preview": bool, "measure": bool, "backend": str, "timeout": (int, float)}
HEARTBEAT_S = 15


def manager():
    return current_app.extensions["torchbolt.jobs"]


def parse_options(raw) -> Options:
    """Only the options a user may choose, each of its JSON type; the engine checks values."""
    if not isinstance(raw, dict):
        raise ApiError(400, "'options' must be a JSON object")
    for name, value in raw.items():
        kind = USER_OPTIONS.get(name)
        if kind is None:
            raise ApiError(400, f"unknown option {name!r}; allowed: {', '.join(USER_OPTIONS)}")
        if not isinstance(value, kind) or (kind != bool and isinstance(value, bool)):
            raise ApiError(400, f"option {name!r} has the wrong type")
    try:
        return Options.from_dict(raw)
    except OptionsError as exc:
        raise ApiError(400, str(exc)) from None


def parse_compile_request() -> tuple[str, Options]:
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise ApiError(400, "send a JSON object: {\"source\": \"...\", \"options\": {...}}")
    source = body.get("source")
    if not isinstance(source, str) or not source.strip():
        raise ApiError(400, "'source' must be a non-empty string of Python code")
    if len(source) > MAX_SOURCE_CHARS:
        raise ApiError(413, f"the source has {len(source):,} characters; the limit is "
                            f"{MAX_SOURCE_CHARS:,}")
    return source, parse_options(body.get("options", {}))


def find_job(job_id: str):
    job = manager().get(job_id)
    if job is None:
        raise ApiError(404, "no such job (jobs are kept for an hour; share links for good)")
    return job


@bp.post("/compile")
def compile_source():
    """Queue a compile, or answer from the store when the same code ran before."""
    source, options = parse_compile_request()
    job = manager().submit(source, options)
    return jsonify({"ok": True, "job": job.id, "key": job.key, "status": job.status,
                    "cached": job.cached}), 202


@bp.get("/jobs/<job_id>")
def job_status(job_id: str):
    """Status and result (partial while running)."""
    return jsonify(find_job(job_id).to_json())


@bp.post("/jobs/<job_id>/cancel")
def cancel_job(job_id: str):
    """Ask a queued or running job to stop."""
    job = find_job(job_id)
    job.cancel.set()
    return jsonify({"ok": True, "job": job.id, "status": job.status})


@bp.get("/jobs/<job_id>/events")
def job_events(job_id: str):
    """Server-sent events until `done`; resumes after `Last-Event-ID` on reconnect."""
    job = find_job(job_id)
    last = request.headers.get("Last-Event-ID", "-1")
    start = int(last) if last.lstrip("-").isdigit() else -1

    def stream():
        index = start
        yield "retry: 1000\n\n"
        while True:
            batch = job.events_after(index, HEARTBEAT_S)
            if not batch:
                if job.is_finished:
                    return
                yield ": keep-alive\n\n"
            for event in batch:
                index += 1
                yield f"id: {index}\nevent: {event['type']}\ndata: {json.dumps(event)}\n\n"
                if event["type"] == "done":
                    return

    return Response(stream(), mimetype="text/event-stream",
                    headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def stored(key: str) -> dict:
    entry = manager().store.get(key) if is_key(key) else None
    if entry is None:
        raise ApiError(404, "no result under this share key")
    return entry


@bp.get("/results/<key>")
def result(key: str):
    """A stored result with its code and options."""
    return jsonify({"ok": True, **stored(key)})


@bp.get("/results/<key>/graph")
def result_graph(key: str):
    """Nodes, edges and layout of one graph stage of one compile."""
    found = manager().result_for(key) if is_key(key) else None
    if found is None:
        raise ApiError(404, "no result under this key")
    compile_id, stage = request.args.get("compile", ""), request.args.get("stage", "")
    compiled = next((c for c in found["compiles"] if c["id"] == compile_id), None)
    if compiled is None or stage not in compiled["stages"]:
        raise ApiError(404, f"compile {compile_id!r} has no stage {stage!r}")
    return jsonify(graph_view(compiled["stages"][stage],
                              parse_collapse(request.args.get("collapse", "auto"))))


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


@bp.get("/status")
def status():
    """The environment results are computed in."""
    return jsonify({"ok": True, "environment": manager().environment})
