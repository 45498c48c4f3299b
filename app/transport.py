"""A result a stage at a time, so that big results travel once: a running job's result *index*
(its stages without their texts), polled with a `since` cursor that answers only when something is
new, and one stage's text when the page shows it (both gzipped by app/http.py).

    GET /api/jobs/ID?view=index[&since=V]   -> the job, its result as an index, `version`;
                                               `result: null, unchanged: true` when V is current
    GET /api/jobs/ID/stage?compile=C&stage=S, GET /api/results/KEY/stage?...  -> one stage
"""

from __future__ import annotations

from flask import request

from compiler_core import result_index, stage_part

from .errors import ApiError


def handle_index(handle) -> dict:
    """The handle as `to_json` gives it, its result as an index; nothing of the result when the
    client's `since` is the current version."""
    version = handle.version
    unchanged = request.args.get("since") == version
    data = handle.to_json(with_result=not unchanged)
    if data["result"] is not None:
        data["result"] = result_index(data["result"])
    return {**data, "version": version, "unchanged": unchanged}


def stage_answer(result: dict | None) -> dict:
    """One stage of one compile (`compile`, `stage` query arguments) of `result`."""
    compile_id, stage = request.args.get("compile", ""), request.args.get("stage", "")
    part = stage_part(result, compile_id, stage) if result is not None else None
    if part is None:
        raise ApiError(404, f"no stage {stage!r} of compile {compile_id!r} (yet)")
    return {"ok": True, "compile": compile_id, "stage": stage, **part}
