"""GPU gallery: scripts sized for a GPU (and small enough on CPU), one workload each, used by the
timing views and `bench/gpu_timing.py`. Same file format as `compiler_core.gallery`."""

from __future__ import annotations

from pathlib import Path

from ..gallery import Example, _FILE_NAME, _load

_DIR = Path(__file__).resolve().parent


def list_examples() -> list[Example]:
    """All GPU gallery scripts, sorted by their NN_ number."""
    return [_load(p) for p in sorted(_DIR.glob("*.py")) if _FILE_NAME.match(p.name)]
