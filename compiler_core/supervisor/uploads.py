"""TORCH_TRACE uploads, read in a process of their own with a time and memory budget.

An upload is untrusted text: the server saves its files to a private temporary folder (they
stream to disk, never held whole in the server's memory) and a helper process
(`python -m compiler_core.report.trace_log`, no torch) reads them, a line at a time, into a
result under the `parse_seconds` limit of wall-clock and CPU time and `PARSE_MEMORY` of address
space, and answers with the result's stored form, which the server stores as it is: it never
holds the result expanded, so its memory stays flat however large the uploads. Whatever the
files hold, the server's other requests never wait on the parsing: it is another process.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

from ..limits import limit
from ..report.stored import StoredResult

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PARSE_MEMORY = 3 << 30  # address space: the log is read a line at a time; its result is held


class TraceError(ValueError):
    """The files hold no trace log, or reading them went past a limit (the message says)."""


def read_trace_folder(folder: str, names: dict[str, str]) -> tuple[dict, StoredResult]:
    """The result of the log files in `folder` ({file in folder: name to show}): its
    `environment` and `user_file`, and the whole result in its stored form."""
    budget = limit("parse_seconds")
    child = subprocess.Popen(
        [sys.executable, "-m", "compiler_core.report.trace_log"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=folder,
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": PACKAGE_ROOT, "LANG": "C.UTF-8"})
    try:
        resource.prlimit(child.pid, resource.RLIMIT_AS, (PARSE_MEMORY, PARSE_MEMORY))
        resource.prlimit(child.pid, resource.RLIMIT_CPU, (int(budget) + 1, int(budget) + 1))
    except (OSError, ValueError):
        pass  # it has already ended; its exit status says how
    try:
        out, err = child.communicate(json.dumps({"folder": folder, "names": names}).encode(),
                                     timeout=budget)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise TraceError(f"reading the log took longer than {budget:g} s (the server's "
                         "parse_seconds limit)") from None
    if child.returncode == 3:
        raise TraceError(err.decode("utf-8", errors="replace").strip())
    if child.returncode != 0:
        raise TraceError(f"reading the log failed (exit {child.returncode}: past the parse "
                         f"time or memory limits?) {err.decode(errors='replace')[-300:]}")
    head, _, blob = out.partition(b"\n")
    try:
        return json.loads(head), StoredResult(blob)
    except ValueError:
        raise TraceError("the log reader's answer could not be read") from None
