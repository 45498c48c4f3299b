"""A multi-process run's TORCH_TRACE folder (one log per rank, the folder tlparse's
`--all-ranks-html` reads) as one result.

Each rank's log is built into a result of its own, so that every part of it resolves within its
rank (a recompile's `previous` is PyTorch's `0/0`, meaning that rank's), then the results are
joined: compiles in rank order, each compile id naming its rank (`[rank 1] 0/0`, which the page's
compile menu shows), the run-level lists one after the other.
"""

from __future__ import annotations

from collections import Counter

RANK_ID = "[rank {rank}] {id}"
# The fields of a result that name compiles (result.schema.json): a compile id or a list of them.
ID_FIELDS = frozenset({"compile_id", "compile_ids", "previous", "resumes_in", "entries",
                       "compiled_while_timing"})


def rank_id(rank: int, compile_id: str) -> str:
    return RANK_ID.format(rank=rank, id=compile_id)


def _renamed(value, rank: int):
    """Every compile id in `value` named with its rank (a copy of the dicts and lists)."""
    if isinstance(value, list):
        return [_renamed(item, rank) for item in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        if key in ID_FIELDS and isinstance(item, str):
            item = rank_id(rank, item)
        elif key in ID_FIELDS and isinstance(item, list):
            item = [rank_id(rank, i) if isinstance(i, str) else i for i in item]
        else:
            item = _renamed(item, rank)
        out[key] = item
    return out


def ranked(result: dict, rank: int) -> dict:
    """The result with its compile ids named with its rank. A stage is not walked (its text,
    lines and nodes name no compile): only its own `compile_id` is renamed."""
    out = {key: _renamed(value, rank) for key, value in result.items() if key != "compiles"}
    out["compiles"] = [{**_renamed({k: v for k, v in c.items() if k != "stages"}, rank),
                        "id": rank_id(rank, c["id"]),
                        "stages": {name: _renamed_stage(stage, rank)
                                   for name, stage in c["stages"].items()}}
                       for c in result["compiles"]]
    return out


def _renamed_stage(stage: dict, rank: int) -> dict:
    if not isinstance(stage.get("compile_id"), str):
        return stage
    return {**stage, "compile_id": rank_id(rank, stage["compile_id"])}


def joined(results: list[tuple[int, dict]]) -> dict:
    """One result of each rank's (in rank order): the first rank's environment, options and
    user file; every list joined; what was not read counted over all ranks."""
    parts = [ranked(result, rank) for rank, result in results]
    out = dict(parts[0])
    for key, value in parts[0].items():
        if isinstance(value, list):
            out[key] = [item for part in parts for item in part.get(key) or []]
    out["trace_unread"] = dict(sum((Counter(part["trace_unread"]) for part in parts), Counter()))
    cudagraphs = [part["cudagraphs"] for part in parts if part.get("cudagraphs")]
    if cudagraphs:
        out["cudagraphs"] = {key: ([i for c in cudagraphs for i in c.get(key) or []]
                                   if isinstance(value, list) else value)
                             for key, value in cudagraphs[0].items()}
    return out
