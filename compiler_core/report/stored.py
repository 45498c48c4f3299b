"""A result as the share stores keep it: zlib-compressed JSON within the stored-result limits.

A stored result lives for good and every client may fetch it, so one job may add at most
`result_compressed_bytes` to a store and `result_bytes` of JSON (`compiler_core/limits.py`).
A result over either keeps its structure: its largest texts (stage texts, kernel sources,
output) are replaced by a one-line mark, largest first, until it fits; each is named in
`truncated`. The 32-layer TransformerEncoder's real result (21.4 MB, 1.35 MB compressed) fits
whole.
"""

from __future__ import annotations

import json
import zlib

from ..limits import limit

LEVEL = 6


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


def _fits(result: dict) -> tuple[bool, bytes, bytes | None]:
    """(within both limits, the result's JSON, its compressed form when the JSON is within)."""
    data = json.dumps(result).encode("utf-8")
    if len(data) > limit("result_bytes"):
        return False, data, None
    blob = zlib.compress(data, LEVEL)
    return len(blob) <= limit("result_compressed_bytes"), data, blob


def _drop(holder: dict, key: str, size: int) -> None:
    holder[key] = (f"[dropped by torchbolt: {size:,} characters; a stored result is kept within "
                   "result_bytes / result_compressed_bytes]")
    if "src_lines" in holder:
        holder["src_lines"], holder["truncated"] = [None], True
        for extra in ("src_more", "kernel_src"):
            holder.pop(extra, None)


def compress_result(result: dict) -> bytes:
    """The stored form of `result`, its largest texts dropped first when over the limits."""
    fits, data, blob = _fits(result)
    if fits:
        return blob
    result = json.loads(data)  # a copy: the caller's result stays whole
    truncated = result.setdefault("truncated", [])
    for size, holder, key, what in _texts(result):
        if size < 1000:
            break
        _drop(holder, key, size)
        truncated.append({"limit": "result_compressed_bytes",
                          "message": f"{what}: {size:,} characters dropped from the stored result"})
        if len(truncated) % 8 == 0 or size < 1 << 20:  # re-measure now and then, not each drop
            fits, _, blob = _fits(result)
            if fits:
                return blob
    fits, _, blob = _fits(result)
    return blob if fits else _fits(_skeleton(result))[2]


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
    """The stored result's JSON, unparsed: what a server sends on as it is."""
    return zlib.decompress(blob)


def expand_result(blob: bytes) -> dict:
    return json.loads(result_json(blob))
