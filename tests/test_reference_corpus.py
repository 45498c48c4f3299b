"""Scripts from PyTorch's own tests (tests/reference/corpus/, each names its source) run through
the engine and compared, field by field, with what PyTorch's own counters, loggers and callbacks
report for the same script in a plain process (tests/reference/plain_reference.py): graphs,
frame compiles, graph breaks (gb_type and line), recompiles (each reason), fullgraph errors, and
per call which compiled graphs ran.

A case marked xfail(strict) is a disagreement already reported in issue 40, where the engine is
wrong; it turns into an XPASS failure when the fix lands (then drop the mark).
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys

import pytest

from compiler_core import Options

CORPUS = os.path.join(os.path.dirname(__file__), "reference", "corpus")
SCRIPTS = sorted(glob.glob(os.path.join(CORPUS, "*.py")))
NAMES = [os.path.basename(path)[:-3] for path in SCRIPTS]
FIELDS = ("graphs", "compiles", "breaks", "recompiles", "limit_hits", "errors", "calls")
LIMIT = "Dynamo recompile limit exceeded"  # PyTorch's gb_type of a compile refused at the limit

KNOWN: dict = {}  # (script, field) -> why the engine disagrees (an issue 40 item, or reported)


@pytest.fixture(scope="session")
def reference(tmp_path_factory) -> dict:
    """name -> what PyTorch reported, every corpus script in one plain process."""
    out = tmp_path_factory.mktemp("reference") / "reference.json"
    runner = os.path.join(os.path.dirname(__file__), "reference", "plain_reference.py")
    done = subprocess.run([sys.executable, runner, str(out), *SCRIPTS], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return {os.path.basename(path)[:-3]: report
            for path, report in json.loads(out.read_text()).items()}


@pytest.fixture(scope="session")
def engine(worker):
    """name -> the engine's result for that script (each run once, when first asked for)."""
    results: dict[str, dict] = {}

    def result(name: str) -> dict:
        if name not in results:
            path = os.path.join(CORPUS, name + ".py")
            results[name] = worker.run(open(path).read(),
                                       Options(device="cpu", measure=False, views=False),
                                       user_file=path)
        return results[name]
    return result


def reason_key(reason: str) -> str:
    """A guard failure's key part: its first line without the source comment PyTorch pads it
    with (`n == 0    # return x + n  # ob/main.py:6 in f`), spaces collapsed."""
    first = reason.strip().partition("\n")[0].partition("  #")[0]
    return " ".join(first.split())


def engine_view(result: dict, field: str):
    compiles = result["compiles"]
    graphs = {c["id"] for c in compiles if c["has_graph"]}
    if field == "graphs":
        return sorted(graphs)
    if field == "compiles":
        return sorted(c["id"] for c in compiles)
    if field == "breaks":
        return sorted((b["gb_type"], b["line"]) for b in result["graph_breaks"])
    if field == "recompiles":
        by_id: dict[str, list] = {}
        for r in result["recompiles"]:  # each failed entry's guard, or (older) one per entry
            for miss in r.get("misses") or [r]:
                stated = (f"{miss['previous']}: {miss['reason']}" if miss["previous"]
                          else miss["reason"])
                by_id.setdefault(r["compile_id"], []).append(reason_key(stated))
        return sorted(by_id.items())
    failures = [(c["id"], c["failure"]) for c in compiles if c["failure"]]
    if field == "limit_hits":
        return [cid for cid, f in failures if f["reason"].startswith(LIMIT)]
    if field == "errors":  # a failed compile whose call raised (a skipped frame's did not)
        raised = {c["compile_id"] for c in result["calls"] if c["outcome"] == "error"}
        return sorted((f["type"], f["reason"].partition("\n")[0] if f["type"] == "Unsupported"
                       else None, f["line"]) for cid, f in failures if cid in raised)
    return [{"outcome": c["outcome"], "compile_id": c["compile_id"],
             "eager_reason": c.get("eager_reason"),
             "graphs": sorted(e for e in c["entries"] if e in graphs)} for c in result["calls"]]


def reference_view(report: dict, field: str):
    if field in ("graphs", "compiles"):
        return sorted(report[field])
    if field == "breaks":
        return sorted((b["gb_type"], b["line"]) for b in report["breaks"])
    if field == "recompiles":
        return sorted((r["compile_id"], [reason_key(x) for x in r["reasons"]])
                      for r in report["recompiles"])
    if field == "limit_hits":
        return report["limit_hits"]
    if field == "errors":
        return sorted((c["error"]["type"], c["error"]["gb_type"], c["error"]["line"])
                      for c in report["calls"] if c["error"])
    return [{"compiled": c["compiled"], "ran": c["ran"], "error": c["error"]}
            for c in report["calls"]]


def expected_outcome(theirs: dict) -> str | None:
    """The engine's outcome PyTorch's record of a call implies, where it implies one."""
    if theirs["error"]:
        return "error"
    if theirs["compiled"]:
        return "compile" if theirs["compiled"][0].endswith("/0") else "recompile"
    return None


def outcome_disagreement(ours: dict, theirs: dict, graphs: list[str]) -> str | None:
    compiled = theirs["compiled"]
    if (ours["outcome"], ours["eager_reason"]) == ("eager", "skipped"):
        # the compile that made no graph, or none when Dynamo skipped the frame at an earlier call
        cid = ours["compile_id"]
        if (cid is None and not compiled) or (cid in compiled and cid not in graphs):
            return None
        return f"skipped {cid}, PyTorch: compiled {compiled or 'nothing'}, graphs {graphs}"
    compiling = ours["outcome"] if ours["outcome"] in ("compile", "recompile", "error") else None
    if compiling != expected_outcome(theirs) or (compiled and ours["compile_id"] != compiled[0]):
        return f"{ours['outcome']} {ours['compile_id']}, PyTorch: compiled {compiled or 'nothing'}"
    return None


def call_disagreements(engine_calls: list[dict], reference_calls: list[dict],
                       reference_graphs: list[str]) -> list[str]:
    """What the engine says of each call that PyTorch contradicts. The engine's outcome and
    entries are of the callable's own frame and the frames the call compiled (on a hit, only the
    own frame's entry), so its graphs must be among those that ran, not all of them; an `eager`
    call may still run other functions' compiled code."""
    if len(engine_calls) != len(reference_calls):
        return [f"{len(engine_calls)} calls, PyTorch saw {len(reference_calls)}"]
    wrong = []
    for i, (ours, theirs) in enumerate(zip(engine_calls, reference_calls)):
        ran = [] if theirs["ran"] == "eager" else theirs["ran"]
        if disagreement := outcome_disagreement(ours, theirs, reference_graphs):
            wrong.append(f"call {i}: {disagreement}")
        if not set(ours["graphs"]) <= set(ran):
            wrong.append(f"call {i}: {ours['outcome']} by {ours['graphs']}, PyTorch: graphs "
                         f"{ran or 'none'} ran")
    return wrong


CASES = [pytest.param(name, field, id=f"{name}-{field}",
                      marks=[pytest.mark.xfail(strict=True, reason=KNOWN[name, field])]
                      if (name, field) in KNOWN else [])
         for name in NAMES for field in FIELDS]


def test_the_corpus_covers_what_the_issue_asks():
    assert len(SCRIPTS) >= 25
    for path in SCRIPTS:
        header = open(path).read().split("\n", 2)[:2]
        assert re.match(r"# Adapted from PyTorch test/(dynamo|inductor)/test_\w+\.py::\w+",
                        header[0]), path
        assert "pytorch/pytorch" in header[1], path


@pytest.mark.parametrize("name", NAMES)
def test_the_reference_agrees_with_itself(reference, name):
    """The reference's own checks: the script ran, its graphs number as Dynamo's own
    `unique_graphs` counter says, and every graph and break was seen."""
    report = reference[name]
    assert report["error"] is None, report["error"]
    assert len(report["graphs"]) == report["unique_graphs"]
    assert set(report["graphs"]) <= set(report["compiles"])
    assert all(b["gb_type"] and b["line"] for b in report["breaks"]), report["breaks"]


@pytest.mark.parametrize("name, field", CASES)
def test_engine_agrees_with_pytorch(reference, engine, name, field):
    result = engine(name)
    assert result["error"] is None, result["error"]
    ours, theirs = engine_view(result, field), reference_view(reference[name], field)
    if field == "calls":
        assert call_disagreements(ours, theirs, reference[name]["graphs"]) == [], (ours, theirs)
    else:
        assert ours == theirs
