"""`result["calls"]`: the calls timeline, one entry per call of a compiled callable in the order
the script made them (the job's `call` records, see `runtime/calls.py` for what each field
means and where it comes from), with the reason of each recompile from PyTorch's
`recompile_reasons` (features/recompiles.py): in one line, and whole.
"""

from __future__ import annotations

from .spec import INTEGER, LIST, TEXT, Feature, Part, record


def calls(run) -> list[dict]:
    """One entry per `call` record of the run (`report.result.RunRecords`), its recompile's
    reason from the run's `recompiles`."""
    names = {r["meta"]["index"]: r["meta"]["name"] for r in run.all("compiled_callable")}
    reasons: dict[str, list[dict]] = {}
    for recompile in run.result["recompiles"]:  # one per recompile, each cache entry it missed
        reasons.setdefault(recompile["compile_id"], []).extend(recompile["misses"])
    out = []
    for record in run.all("call"):
        meta = record["meta"]
        reason = reasons.get(meta["compile_id"]) if meta["outcome"] == "recompile" else None
        out.append({**meta, "name": names.get(meta["callable"]),
                    "reason": _stated(reason) if reason else None,
                    "summary": reason[0]["summary"] if reason else None})
    return out


def _stated(recompiles: list[dict]) -> str:
    """The reasons as PyTorch states them, each after the entry it names (`0/0: ...`), the
    user's paths as the script's name."""
    return "\n".join(f"{r['previous']}: {r['detail']}" if r["previous"] else r["detail"]
                      for r in recompiles)


def compiled_callables(run) -> list[dict]:
    """Each torch.compile'd callable, with the argument signatures it was called with and the
    compiles its calls made or ran (`compile_ids`, in order)."""
    calls_of: dict[int, list] = {}
    for record in run.all("compiled_call"):
        calls_of.setdefault(record["meta"]["callable"], []).append(record["meta"]["arguments"])
    compiles_of: dict[int, dict] = {}
    for record in run.all("call"):
        meta = record["meta"]
        ids = compiles_of.setdefault(meta["callable"], {})
        ids.update(dict.fromkeys(cid for cid in [meta["compile_id"], *meta.get("entries", [])]
                                 if cid))
    return [{**r["meta"], "calls": calls_of.get(r["meta"]["index"], []),
             "compile_ids": list(compiles_of.get(r["meta"]["index"], {}))}
            for r in run.all("compiled_callable")]


FEATURE = Feature(
    "calls",
    records=(record("compiled_callable", index=INTEGER, name=TEXT),
             record("compiled_call", callable=INTEGER, arguments=LIST),
             record("call", callable=INTEGER, outcome=TEXT, compile_id="text?")),
    attach=("runtime.callables:attach",),
    run_parts=(Part("calls", calls, []), Part("compiled_callables", compiled_callables, [])))
