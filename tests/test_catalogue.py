"""The catalogue is the one list of stages, options and error kinds: the API serves it, the
records' progress names and the results' stages agree with it, and the page's kinds are its."""

from __future__ import annotations

import json

import compiler_core
from compiler_core import ErrorKind, catalogue
from compiler_core.features import GRAPH_STAGES
from compiler_core.features import RECORD_MARKER, RECORD_STAGE, breaks, recompiles

pytest_plugins = ["test_app_fixtures"]

STAGES = {stage["name"]: stage for stage in catalogue()["stages"]}


def test_api_serves_the_catalogue(client):
    body = client.get("/api/catalogue").get_json()
    assert body.pop("ok") is True and body == json.loads(json.dumps(catalogue()))
    assert len(STAGES) == len(body["stages"])  # stage names are unique


def test_records_announce_catalogue_stages():
    """A stage announcement names a stage; a graph break or a recompile is a marker."""
    assert set(RECORD_STAGE.values()) <= set(STAGES)
    assert set(RECORD_MARKER.values()) == {*breaks.PROGRESS.values(), *recompiles.PROGRESS.values()}
    assert {name for name, stage in STAGES.items() if stage["graph"]} == set(GRAPH_STAGES)


def test_every_stage_a_result_holds_is_in_the_catalogue_with_its_title(gallery_results):
    seen = set()
    for result in gallery_results.values():
        for compiled in result["compiles"]:
            for name, artifact in compiled["stages"].items():
                spec = STAGES[name]
                # the Kernels stage is C++ where every kernel is (a CPU's), Triton's Python on a GPU
                cpp = name == "kernels" and all(k["kind"] in ("cpp", "extern")
                                                for k in compiled["kernels"])
                assert spec["field"] == "stages" and artifact["language"] == (
                    "cpp" if cpp else spec["language"])
                assert artifact["title"].startswith(spec["title"]), (name, artifact["title"])
                seen.add(name)
        if result["timings"]:
            seen.add("timings")
        for field in ("exports", "torchscript"):  # gallery 14 and 15 make these programs
            for program in result[field]:
                for name, artifact in program["stages"].items():
                    assert STAGES[name]["field"] == field and artifact["title"] == STAGES[name]["title"]
                    seen.add(name)
    # precompile_source: no gallery example precompiles (torch 2.13 has no precompile); it is
    # held by tests/test_precompile.py
    cpu_stages = {n for n in STAGES if not n.startswith("triton_")} - {"aot_joint",
                                                                     "precompile_source"}
    assert cpu_stages <= seen, cpu_stages - seen


def test_error_kinds_are_the_engines_and_transient_ones_rerun():
    kinds = {k["kind"]: k for k in catalogue()["error_kinds"]}
    assert kinds.keys() == {k.value for k in ErrorKind}
    assert ErrorKind.is_transient("Timeout") and not ErrorKind.is_transient("NoCompile")
    assert not ErrorKind.is_transient("ZeroDivisionError")  # the script's own: a lasting fact


def test_a_run_past_its_limit_has_the_timeout_kind(worker):
    result = worker.run("import time\ntime.sleep(30)\n", compiler_core.Options(device="cpu",
                                                                             timeout=1))
    assert result["error"]["type"] == ErrorKind.TIMEOUT and result["error"]["line"] == 2
