"""When a series says compiled is faster or slower: enough paired turns, a quiet machine, and
the middle half of the turns' ratios on one side of 1. Else it says why it can't tell.

Issue 40 showed why each condition: "compiled is slower, about 2.0x" came from 5 paired turns
on a loaded machine, for a tiny model whose calls lose more to other work than to their own.
"""

from __future__ import annotations

MIN_PAIRS = 10


def judge(series: dict) -> dict:
    """{outcome, reason}: outcome is faster, slower, within_noise, busy (the machine was, the
    reason gives the figure), too_few (paired turns) or not_reported (outputs differ)."""
    speed = series.get("speedup")
    if speed is None:
        return {"outcome": "not_reported",
                "reason": "compiled's output differs from eager's, so no speed-up is reported"}
    busy = (series.get("contention") or {}).get("busy")
    if busy:
        return {"outcome": "busy", "reason": busy}
    if speed["pairs"] < MIN_PAIRS:
        return {"outcome": "too_few", "reason": f"only {speed['pairs']} paired turns were "
                f"timed; a verdict needs at least {MIN_PAIRS}"}
    if speed["low"] > 1:
        return {"outcome": "faster", "reason": "the middle half of the paired turns' ratios "
                "all say faster"}
    if speed["high"] < 1:
        return {"outcome": "slower", "reason": "the middle half of the paired turns' ratios "
                "all say slower"}
    return {"outcome": "within_noise", "reason": "the middle half of the paired turns' ratios "
            "lies on both sides of 1"}
