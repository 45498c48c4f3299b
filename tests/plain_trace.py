"""A script run in a plain process (no torchbolt) under TORCH_TRACE, Inductor's caches off: the
independent reference the engine's capture is checked against."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_traced(args: list[str], folder: Path, timeout: int = 300) -> tuple[str, dict[str, str]]:
    """`python ARGS`'s stdout and the log files it wrote, {file name: text}."""
    trace = folder / "trace"
    env = {**os.environ, "TORCH_TRACE": str(trace), "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}
    proc = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, {p.name: p.read_text() for p in trace.iterdir() if p.suffix == ".log"}
