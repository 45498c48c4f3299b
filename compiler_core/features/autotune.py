"""Which choices autotuning benchmarked, per compile (`autotuning`): built from the
`autotune_choices` records of Inductor's feedback-saver hook (`runtime/hooks/autotune.py`),
each list bounded.
"""

from __future__ import annotations

import math

from .spec import Feature, Part, record

ENTRIES = 200  # choices per autotuned op
OPS = 64  # autotuned ops per compile
NAME = 500  # a choice's name or description, an op's input shape


def _text(value, cap: int) -> str:
    return str(value)[:cap]


def _ms(value) -> float | None:
    """A benchmark time, None where Inductor measured none that is finite (a failed choice)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _tuned_op(meta: dict) -> dict:
    choices = [{"name": _text(c.get("name", "?"), NAME),
                "description": _text(c.get("description") or "", NAME), "ms": _ms(c.get("ms"))}
               for c in list(meta.get("choices") or [])[:ENTRIES] if isinstance(c, dict)]
    timed = [c for c in choices if c["ms"] is not None]
    winner = min(timed, key=lambda c: c["ms"]) if timed else None
    for choice in choices:
        choice["winner"] = choice is winner
    return {"op": _text(meta.get("op", "?"), NAME),
            "inputs": [_text(i, NAME) for i in list(meta.get("inputs") or [])[:16]],
            "choices": choices, "winner": winner["name"] if winner else None}


def autotuning(compile_records) -> list[dict]:
    """Each op Inductor autotuned in this compile: every choice it benchmarked, with its time,
    fastest first; `winner` is the fastest, the one Inductor keeps (on a GPU, benchmarking a
    Triton template with its epilogue fused in can still pick another)."""
    return [_tuned_op(r["meta"]) for r in compile_records.all("autotune_choices")[:OPS]]


FEATURE = Feature(
    "autotune", records=(record("autotune_choices"),), attach=("runtime.hooks.autotune:attach",),
    compile_parts=(Part("autotuning", lambda group, compiled: autotuning(group), []),))
