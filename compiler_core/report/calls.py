"""`result["calls"]`: the calls timeline, one entry per call of a compiled callable in the order
the script made them (the job's `call` records, see `runtime/calls.py` for what each field
means and where it comes from), with the reason of each recompile from PyTorch's
`recompile_reasons`.
"""

from __future__ import annotations


def calls(records: list[dict], recompiles: list[dict]) -> list[dict]:
    names = {r["meta"]["index"]: r["meta"]["name"] for r in records
             if r["name"] == "compiled_callable"}
    reasons: dict[str, list[str]] = {}
    for recompile in recompiles:
        previous = f"{recompile['previous']}: " if recompile["previous"] else ""
        reasons.setdefault(recompile["compile_id"], []).append(previous + recompile["reason"])
    out = []
    for record in records:
        if record["name"] != "call":
            continue
        meta = record["meta"]
        reason = reasons.get(meta["compile_id"]) if meta["outcome"] == "recompile" else None
        out.append({**meta, "name": names.get(meta["callable"]),
                    "reason": "\n".join(reason) if reason else None})
    return out
