"""One meaning per name in the JSON API (issue 42 item 5): a submit's id is `handle` in every
answer, with `job` (the same id) kept for clients written before; a `stage_errors` entry names
what failed as `step`, with `stage` (the same name) kept, since that is not always a stage; a
`stage` event that announces a progress marker (a graph break) names it `marker`."""

from __future__ import annotations

import os

from compiler_core.features import STAGE_NAMES, STAGES
from compiler_core.report.conform import SCHEMA
from compiler_core.report.result import build_result
from compiler_core.wire import parse_record, read_records

from test_app_api import BREAK, TINY, sse_events
from test_app_fixtures import wait_for_handle

pytest_plugins = ["test_app_fixtures"]

REAL = os.path.join(os.path.dirname(__file__), "data", "print_graph_break.records.jsonl")


def test_every_answer_about_a_submit_names_its_handle_and_keeps_job(client, compiled):
    compiled(TINY)  # stored: the submit below is answered at once
    submit = client.post("/api/compile", json={"source": TINY, "options": {}}).get_json()
    handle = submit["handle"]
    assert submit["job"] == handle and submit["cached"]
    assert wait_for_handle(client, handle)["handle"] == handle
    index = client.get(f"/api/jobs/{handle}?view=index").get_json()
    assert index["handle"] == index["job"] == handle
    cancel = client.post(f"/api/jobs/{handle}/cancel").get_json()
    assert cancel["handle"] == cancel["job"] == handle


def test_a_graph_break_is_announced_as_a_marker_not_as_a_stage(client):
    source = BREAK + "# its own run: a stored one has no stage events\n"
    submit = client.post("/api/compile", json={"source": source, "options": {"measure": False}})
    handle = submit.get_json()["handle"]
    assert wait_for_handle(client, handle)["status"] == "done"
    announced = [e for kind, e in sse_events(client.get(f"/api/jobs/{handle}/events"))
                 if kind == "stage"]
    markers = [e for e in announced if "marker" in e]
    assert {e["marker"] for e in markers} == {"graph_break"}
    assert all(e["stage"] == e["marker"] for e in markers)  # kept for clients written before
    stages = {e["stage"] for e in announced if "marker" not in e}
    assert "dynamo_graph" in stages and stages <= {spec.name for spec in STAGES}


def test_a_stage_errors_entry_names_the_step_that_failed():
    """A dropped record, a step of the job and the schema check are steps, not stages: each
    entry says so in `step`, and `stage` keeps its old value for older clients."""
    job_step = parse_record(b'{"name": "stage_error", "compile_id": null, "meta": '
                            b'{"stage": "line_owners", "message": "no provenance"}}')
    bad_error = parse_record(b'{"name": "error", "compile_id": null}')
    result = build_result(read_records(REAL) + [job_step, bad_error], "/job/main.py")
    steps = {e["step"]: e for e in result["stage_errors"]}
    assert {"line_owners", "error"} <= set(steps) and not set(steps) & set(STAGE_NAMES)
    assert all(e["stage"] == e["step"] for e in result["stage_errors"])
    assert steps["line_owners"]["message"] == "no provenance"


def test_the_schema_describes_step_and_keeps_stage():
    entry = SCHEMA["properties"]["stage_errors"]["items"]
    assert entry["properties"]["step"]["type"] == "string"
    assert "kept for clients" in entry["properties"]["stage"]["description"]
