"""A script run in a plain process (no torchbolt) under TORCH_TRACE, Inductor's caches off: the
independent reference the engine's capture is checked against."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def traced_folder(args: list[str], folder: Path, timeout: int = 300,
                  inductor_cache: Path | None = None) -> tuple[str, Path]:
    """`python ARGS`'s stdout and the folder of the log files it wrote. Inductor's caches are
    off, unless `inductor_cache` names a folder for them (a log of the recompiles they answer)."""
    trace = folder / "trace"
    caches = ({"TORCHINDUCTOR_CACHE_DIR": str(inductor_cache)} if inductor_cache else
              {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"})
    proc = subprocess.run([sys.executable, *args], env={**os.environ, "TORCH_TRACE": str(trace),
                                                        **caches},
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout, trace


def run_traced(args: list[str], folder: Path, timeout: int = 300) -> tuple[str, dict[str, str]]:
    """`python ARGS`'s stdout and the log files it wrote, {file name: text}."""
    stdout, trace = traced_folder(args, folder, timeout)
    return stdout, {p.name: p.read_text() for p in trace.iterdir() if p.suffix == ".log"}
