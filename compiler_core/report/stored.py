"""A result as the share stores keep it: zlib-compressed JSON within the stored-result limits.

A stored result lives for good and every client may fetch it, so one job may add at most
`result_compressed_bytes` to a store and `result_bytes` of JSON (`compiler_core/limits.py`).
A result over either keeps its structure: its largest texts (stage texts, kernel sources,
output) are replaced by a one-line mark, largest first, until it fits; each is named in
`truncated`. The 32-layer TransformerEncoder's real result (21.4 MB, 1.35 MB compressed) fits
whole.

A stored result is read as this version serves it: one stored before version 3 (whose page
built the Kernels stage itself) gains each compile's Kernels stage, built from its kernels,
fusion and timings as a fresh result's is (`features/kernels_stage.py`).
"""

from __future__ import annotations

import json
import re
import zlib

from ..features.kernels_stage import STAGE, kernels_artifact
from ..features.spec import step_error
from ..limits import limit
from .result import cut_stage_text

LEVEL = 6
ROUNDS = 6  # measures of a result over the limits before only its skeleton is kept
MIN_DROPPED = 1000  # characters: shorter texts are never dropped
KERNELS_SINCE = 3  # the result version whose compiles hold their Kernels stage
# A result's JSON starts with its version (`build_result` puts it first): read without parsing.
VERSION_FIRST = re.compile(r'\{"version": (\d+)[,}]')
OLDER_KERNELS = ("this result was stored by an earlier torchbolt (result version {version}), "
                 "whose page built the Kernels stage itself, and what it stored of this "
                 "compile's kernels cannot make the stage")


def _texts(result: dict) -> list[tuple[int, dict, str, str]]:
    """Every large text of a result: (size, holder, key, what)."""
    found = [(len(result.get(k) or ""), result, k, k) for k in ("stdout", "stderr")]
    for owner in (*result.get("compiles", []), *result.get("exports", []),
                  *result.get("torchscript", [])):
        for name, stage in owner.get("stages", {}).items():
            found.append((len(stage.get("text") or ""), stage, "text", f"{owner.get('id')} {name}"))
        for kernel in owner.get("kernels", []):
            found.append((len(kernel.get("source") or ""), kernel, "source",
                          f"{owner.get('id')} kernel {kernel.get('name')}"))
    return sorted(found, key=lambda item: -item[0])


def _measure(result: dict) -> tuple[bytes, bytes | None]:
    """The result's JSON, and its compressed form when the JSON is within `result_bytes`."""
    data = json.dumps(result).encode("utf-8")
    return data, zlib.compress(data, LEVEL) if len(data) <= limit("result_bytes") else None


def _fits(blob: bytes | None) -> bool:
    return blob is not None and len(blob) <= limit("result_compressed_bytes")


def _drop(holder: dict, key: str, size: int) -> None:
    holder[key] = (f"[dropped by torchbolt: {size:,} characters; a stored result is kept within "
                   "result_bytes / result_compressed_bytes]")
    if "src_lines" in holder:
        holder["src_lines"], holder["truncated"] = [None], True
        for extra in ("src_more", "kernel_src"):
            holder.pop(extra, None)


class StoredResult(bytes):
    """A result already in its stored form (`compress_result`'s, made in another process: an
    upload's helper), which the stores keep as it is: the server never expands it."""


def compress_result(result: dict | StoredResult) -> bytes:
    """The stored form of `result`, its largest texts dropped first when over the limits.

    What to drop is chosen from measures, not by compressing again after each drop (a result
    of 1,200 random 20 K-character texts took 58 s of CPU that way): each round drops the
    largest texts left until their own sizes (JSON bytes, and compressed bytes scaled by how
    much the last round's drops really saved) cover the excess, then measures once; a few
    rounds at most, then the skeleton."""
    if isinstance(result, StoredResult):
        return bytes(result)
    data, blob = _measure(result)
    if _fits(blob):
        return blob
    result = json.loads(data)  # a copy: the caller's result stays whole
    truncated = result.setdefault("truncated", [])
    texts = [t for t in _texts(result) if t[0] >= MIN_DROPPED][::-1]  # the largest last
    saving = 1.0  # compressed bytes a drop really saved, per compressed byte of its text alone
    for _ in range(ROUNDS):
        if not texts:
            break
        before = len(blob) if blob is not None else None
        estimated = _drop_until(texts, truncated, len(data) - limit("result_bytes"),
                                before - limit("result_compressed_bytes") if before else 0,
                                saving)
        data, blob = _measure(result)
        if _fits(blob):
            return blob
        if before is not None and blob is not None and estimated:
            saving = max(0.01, min(1.0, saving * (before - len(blob)) / estimated))
    return blob if _fits(blob) else _measure(_skeleton(result))[1]


def _drop_until(texts: list, truncated: list, over_data: int, over_blob: int,
                saving: float) -> float:
    """Drop the largest texts left (taken off the end of `texts`) until their JSON covers
    `over_data` bytes and their compressed size, times `saving`, `over_blob`; the compressed
    bytes estimated saved."""
    saved_data = saved_blob = 0.0
    while texts and (saved_data < over_data or saved_blob < over_blob):
        size, holder, key, what = texts.pop()
        saved_data += len(json.dumps(holder[key]))
        if over_blob > 0:
            saved_blob += len(zlib.compress(holder[key].encode("utf-8"), 1)) * saving
        _drop(holder, key, size)
        truncated.append({"limit": "result_compressed_bytes",
                          "message": f"{what}: {size:,} characters dropped from the stored result"})
    return saved_blob


def _skeleton(result: dict) -> dict:
    """Past every text, the result without its lists (a forged job could fill any of them)."""
    lists = ("compiles", "graph_breaks", "recompiles", "calls", "exports", "torchscript",
             "timings", "compiled_callables", "stage_errors", "notes")
    error = {"type": "OutputLimit", "line": None, "message": (
        "the result was larger than the server stores (result_bytes / result_compressed_bytes) "
        "even without its texts, so only its summary is kept")}
    return {**result, **{k: [] for k in lists}, "environment": {}, "error": error,
            "truncated": [{"limit": "result_bytes", "message": error["message"]}]}


def result_json(blob: bytes) -> bytes:
    """The stored result's JSON as this version serves it: unparsed (what a server sends on as
    it is) unless it was stored before version 3, when it is read, given its Kernels stages
    (`with_kernel_stages`) and written again (the server caches what it serves of a key)."""
    data = zlib.decompress(blob)
    first = VERSION_FIRST.match(data[:32].decode("utf-8", "replace"))
    if first and int(first[1]) >= KERNELS_SINCE:
        return data
    result = json.loads(data)
    return json.dumps(result).encode("utf-8") if with_kernel_stages(result) else data


def with_kernel_stages(result) -> bool:
    """Give each compile of a result stored before version 3 its Kernels stage (in place), as
    the result builder does; a compile whose stored kernels cannot make it gets a
    `stage_errors` entry saying why in words (the pane shows it in the stage's place). False
    for a result of version 3 or later, or of no version: nothing to do."""
    version = result.get("version") if isinstance(result, dict) else None
    if not isinstance(version, int) or version >= KERNELS_SINCE:
        return False
    for compiled in result.get("compiles") or []:
        try:
            made = kernels_artifact(compiled, result)
            if made is not None:
                compiled["stages"][STAGE.name] = made
                cut_stage_text(compiled, STAGE.name, made, result.setdefault("truncated", []))
        except Exception as exc:  # what an older torchbolt stored: any shape
            result.setdefault("stage_errors", []).append(step_error(
                compiled.get("id") if isinstance(compiled, dict) else None, STAGE.name,
                f"{type(exc).__name__}: {exc}", stages=[STAGE.name],
                reason=OLDER_KERNELS.format(version=version)))
    return True


def expand_result(blob: bytes) -> dict:
    return json.loads(result_json(blob))
