"""The result index: the result without its stage texts, for clients that fetch each text when
they show it (the page polls a running job's index, then asks for one stage at a time).

Each artifact keeps what names and places it, plus `size` (characters of its text); each
kernel its name, kind, graph and user lines. `stage_part` gives the full part of one stage (the
Kernels stage too: it is built with the result, features/kernels_stage.py).
At 16 layers of a TransformerEncoder the result is ~10 MB and its index a few KB per compile.
A final result with less text than `WHOLE_BELOW` travels whole: a round trip per stage would
cost more than its bytes (a small function's result is tens of KB). A partial one is always an
index: it is polled again at every change.
"""

from __future__ import annotations

ARTIFACT_KEYS = ("stage", "compile_id", "title", "language", "sections", "view", "source_note")
KERNEL_KEYS = ("name", "kind", "graph", "lines")


def _artifact_summary(artifact: dict) -> dict:
    return {**{k: artifact[k] for k in ARTIFACT_KEYS if k in artifact},
            "size": len(artifact["text"])}


def _kernel_summary(kernel: dict) -> dict:
    return {**{k: kernel.get(k) for k in KERNEL_KEYS}, "size": len(kernel.get("source") or "")}


WHOLE_BELOW = 256 * 1024  # characters of stage text and kernel source


def text_size(result: dict) -> int:
    return sum(len(a["text"]) for c in result["compiles"] for a in c["stages"].values()) + sum(
        len(k.get("source") or "") for c in result["compiles"] for k in c["kernels"])


def result_index(result: dict) -> dict:
    """The result with each compile's stages and kernels summarised (`indexed: true`); a
    small final result as it is."""
    if not result.get("partial") and text_size(result) < WHOLE_BELOW:
        return result
    compiles = [{**c, "indexed": True,
                 "stages": {name: _artifact_summary(a) for name, a in c["stages"].items()},
                 "kernels": [_kernel_summary(k) for k in c["kernels"]]}
                for c in result["compiles"]]
    return {**result, "compiles": compiles}


def stage_part(result: dict, compile_id: str, stage: str) -> dict | None:
    """`{"artifact": ...}` of one stage of one compile; None when the result has no such part."""
    compiled = next((c for c in result["compiles"] if c["id"] == compile_id), None)
    if compiled is None:
        return None
    artifact = compiled["stages"].get(stage)
    return {"artifact": artifact} if artifact is not None else None
