"""The result in parts (issue 14): a job's result index, polled with `since`, and each stage's
text on demand, gzipped; through Flask's test client on the real engine."""

from __future__ import annotations

import gzip
import json
import time

import pytest

from conftest import TINY_ENCODER
from test_app_api import TINY
from test_app_fixtures import LOAD_PROOF_TIMEOUT_S, outcome

pytest_plugins = ["test_app_fixtures"]


@pytest.fixture(scope="module")
def polled(client):
    """A result big enough to travel as an index (2-layer nn.TransformerEncoder, fw+bw),
    followed from submit to end as the page does: its index, polled with `since`."""
    job = client.post("/api/compile", json={"source": TINY_ENCODER,
                                            "options": {"measure": False,
                                                        "timeout": LOAD_PROOF_TIMEOUT_S}}).get_json()
    since, moved, unchanged, data = None, 0, 0, {"status": "queued"}
    largest_unchanged = 0
    deadline = time.monotonic() + LOAD_PROOF_TIMEOUT_S + 60
    while data["status"] not in ("done", "failed") and time.monotonic() < deadline:
        query = {"view": "index", **({"since": since} if since else {})}
        response = client.get(f"/api/jobs/{job['handle']}", query_string=query)
        data = response.get_json()
        if data["unchanged"]:
            unchanged += 1
            largest_unchanged = max(largest_unchanged, len(response.get_data()))
        else:
            moved += len(response.get_data())
        since = data["version"]
        time.sleep(0.02)
    full = client.get(f"/api/jobs/{job['handle']}").get_json()
    return {"job": job, "moved": moved, "unchanged": unchanged,
            "largest_unchanged": largest_unchanged, "last": data, "full": full}


def test_polling_moves_less_than_one_copy_of_the_result(polled):
    """Every 20 ms from submit to end, yet the answers that carried news moved less than the
    result once (whole results each time moved it once per poll), and an answer with no news
    is a few hundred bytes. Those are counted apart: how many there are follows the machine's
    load (a loaded run takes longer), not what the server sends."""
    assert polled["last"]["status"] == "done", outcome(polled["full"])
    assert polled["unchanged"] > 0
    assert polled["moved"] < len(json.dumps(polled["full"])), polled["moved"]
    assert polled["largest_unchanged"] < 1024, polled["largest_unchanged"]


def test_index_has_no_texts_and_each_stage_comes_on_demand(client, polled):
    job, full = polled["job"], polled["full"]["result"]["compiles"][0]
    compiled0 = polled["last"]["result"]["compiles"][0]
    assert compiled0["indexed"] and set(compiled0["stages"]) == set(full["stages"])
    for name, summary in compiled0["stages"].items():
        assert "text" not in summary and summary["size"] == len(full["stages"][name]["text"])
        part = client.get(f"/api/jobs/{job['handle']}/stage",
                          query_string={"compile": "0/0", "stage": name}).get_json()
        assert part["artifact"] == full["stages"][name]
    kernels = client.get(f"/api/results/{job['key']}/stage",
                         query_string={"compile": "0/0", "stage": "kernels"}).get_json()
    assert kernels["artifact"] == full["stages"]["kernels"]  # built with the result, as any stage
    assert full["kernels"][0]["source"] and full["kernels"][0]["source"] in kernels["artifact"]["text"]
    assert all("source" not in k for k in compiled0["kernels"])


def test_since_the_current_version_sends_no_result(client, polled):
    job_id = polled["job"]["handle"]
    assert polled["last"]["version"] == "final"
    again = client.get(f"/api/jobs/{job_id}?view=index&since=final").get_json()
    assert again["unchanged"] and again["result"] is None and again["status"] == "done"


def test_a_small_final_result_travels_whole(client, compiled):
    job = compiled(TINY)
    index = client.get(f"/api/jobs/{job['handle']}?view=index").get_json()
    assert index["result"] == job["result"] and "indexed" not in index["result"]["compiles"][0]


def test_stage_answers_are_gzipped_and_unknown_stages_404(client, polled):
    job_id = polled["job"]["handle"]
    response = client.get(f"/api/jobs/{job_id}/stage", headers={"Accept-Encoding": "gzip"},
                          query_string={"compile": "0/0", "stage": "output_code"})
    assert response.headers["Content-Encoding"] == "gzip"
    assert json.loads(gzip.decompress(response.get_data()))["artifact"]["text"]
    for query in ({"compile": "0/0", "stage": "nope"}, {"compile": "9/9", "stage": "guards"}):
        missing = client.get(f"/api/jobs/{job_id}/stage", query_string=query)
        assert missing.status_code == 404 and missing.get_json()["ok"] is False
