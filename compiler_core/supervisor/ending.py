"""How a job ended: the supervisor's observations and the files turned into one result.

Every way a job can end (finished, exception, timeout, a limit, crash, os._exit, cancel) becomes
a result with a clear `error` of an `ErrorKind`, naming the user's line where faulthandler saw it.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

from ..errors import ErrorKind
from ..options import Options
from ..report.records import read_records
from ..report.result import build_result
from ..report.stages.common import user_lines
from .slot import Slot


@dataclass
class JobOutcome:
    """What the supervisor observed about how a job ended."""
    returncode: int | None = None
    killed_for: str | None = None  # "timeout", "memory", "cpu", "cancelled", "worker"


def read_capped(path: str, limit: int) -> str:
    """At most `limit` bytes of a file, with a visible mark when more was written."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            data = fh.read(limit)
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    if size > limit:
        text += f"\n[... output truncated: {size:,} bytes written, first {limit:,} shown ...]\n"
    return text


def job_result(slot: Slot, user_file: str, options: Options, outcome: JobOutcome,
               duration: float) -> dict:
    """The result from the job's records and output files, and what the supervisor saw."""
    records = read_records(slot.path("records.jsonl"))
    finished = any(r["name"] == "run_end" for r in records)
    if slot.group and slot.group.oom_killed():
        outcome.killed_for = "memory"
    run = {
        "options": options.to_dict(),
        "stdout": read_capped(slot.path("stdout.txt"), options.output_limit),
        "stderr": read_capped(slot.path("stderr.txt"), options.output_limit),
        "duration_s": round(duration, 3),
        "error": None if finished else abnormal_end(slot, user_file, options, outcome),
    }
    result = build_result(records, user_file, run)
    if result["error"] and slot.group and slot.group.pids_refused():
        result["error"].update(type=ErrorKind.PROCESS_LIMIT.value, message=(
            f"the script tried to run more than {options.pids} processes and threads at "
            f"once (the job's limit): {result['error']['message']}"))
    return result


def abnormal_end(slot: Slot, user_file: str, options: Options, outcome: JobOutcome) -> dict:
    """The error for a job that ended without its `run_end` record."""
    fault = read_capped(slot.path("fault.txt"), 1 << 20)
    lines = user_lines(fault, user_file)  # faulthandler lists the innermost frame first
    line = lines[0] if lines else None
    where = f" while running line {line}" if line else ""
    code = outcome.returncode
    if outcome.killed_for == "timeout":
        kind = ErrorKind.TIMEOUT
        message = f"the script ran longer than the {options.timeout:g} s limit{where}"
    elif outcome.killed_for == "memory":
        kind = ErrorKind.MEMORY_LIMIT
        message = (f"the script used more than the {options.memory_mb} MB memory limit (all its "
                   f"processes together){where}")
    elif outcome.killed_for == "cpu":
        kind = ErrorKind.CPU_LIMIT
        message = (f"the script used more than the {options.cpu_s:g} s CPU-time limit (all its "
                   f"processes together){where}")
    elif outcome.killed_for == "cancelled":
        kind, message = ErrorKind.CANCELLED, "the job was cancelled"
    elif outcome.killed_for == "worker":
        kind, message = ErrorKind.WORKER_DIED, "the worker process died; it will be restarted"
    elif code is not None and code < 0:
        name = signal.Signals(-code).name
        kind, message = ErrorKind.CRASH, f"the worker process crashed with {name}{where}"
    else:
        kind = ErrorKind.EXITED
        message = (f"the script ended the worker process with exit code {code} (os._exit?) "
                   "before it finished")
    return kind.error(message, line, traceback=fault[-4000:])
