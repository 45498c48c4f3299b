"""How a job ended: the supervisor's observations and the files turned into one result.

Every way a job can end (finished, exception, timeout, a limit, crash, os._exit, cancel) becomes
a result with a clear `error` of an `ErrorKind`, naming the user's line where faulthandler saw it.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

from ..errors import ErrorKind
from ..limits import LIMITS
from ..options import Options
from ..parsers.common import user_lines
from .job import Job
from .process import JobProcess


@dataclass
class JobOutcome:
    """What the supervisor observed about how a job ended."""
    returncode: int | None = None
    killed_for: str | None = None  # "timeout", "memory", "cpu", "records", "disk" (the CLI's
    # build cache), "cancelled", "worker"
    started: float | None = None  # when the job process said `started` (monotonic): the script's
    # clock starts, torchbolt's own set-up is over


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


def dropped_records(dropped: dict[str, int]) -> list[dict]:
    """`result["truncated"]` entries for the record lines the supervisor did not keep."""
    notes = {"oversized": ("record_bytes", "record lines longer than {value:,} bytes"),
             "malformed": ("record_bytes", "record lines that were not records")}
    return [{"limit": notes[kind][0], "message": f"{count} " + notes[kind][1].format(
                value=LIMITS["record_bytes"].value) + " were dropped"}
            for kind, count in dropped.items() if count]


def job_result(process: JobProcess, job: Job, user_file: str, outcome: JobOutcome,
               dropped: dict[str, int], duration: float) -> dict:
    """The result from the records the job kept, its output files, and what the supervisor
    saw (records are never read twice: the job's list is already within its limits), built by
    the job's `build`."""
    records, options = job.kept_records(), job.options
    finished = any(r["name"] == "run_end" for r in records)
    if process.group and process.group.oom_killed():
        outcome.killed_for = "memory"
    if job.over_limit and outcome.killed_for is None:
        outcome.killed_for = "records"
    run = {
        "options": options.to_dict(),
        "stdout": read_capped(process.path("stdout.txt"), options.output_limit),
        "stderr": read_capped(process.path("stderr.txt"), options.output_limit),
        "duration_s": round(duration, 3),
        "error": (None if finished and not job.over_limit else
                  abnormal_end(process, user_file, options, outcome, job.over_limit)),
        "truncated": dropped_records(dropped),
    }
    result = job.build(records, user_file, run)
    if result["error"] and process.group and process.group.pids_refused():
        result["error"].update(type=ErrorKind.PROCESS_LIMIT.value, message=(
            f"the script tried to run more than {options.pids} processes and threads at "
            f"once (the job's limit): {result['error']['message']}"))
    return result


def abnormal_end(process: JobProcess, user_file: str, options: Options, outcome: JobOutcome,
                 over_limit: str | None = None) -> dict:
    """The error for a job that ended without its `run_end` record (or past a record limit)."""
    fault = read_capped(process.path("fault.txt"), 1 << 20)
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
    elif outcome.killed_for == "disk":
        kind = ErrorKind.DISK_LIMIT
        message = (f"the script wrote more than the job's {options.disk_mb} MB disk limit into "
                   f"its build cache (kept kernels), so it was stopped{where}; the folder is "
                   "removed")
    elif outcome.killed_for == "records":
        setting = LIMITS[over_limit or "records_per_job"]
        kind = ErrorKind.RECORD_LIMIT
        amount = (f"{setting.value:,} records" if setting.unit == "records"
                  else f"{setting.value / 2**20:g} MiB of records")
        message = (f"the job wrote more than {amount} (the server's `{setting.name}` limit), "
                   f"so it was stopped{where}; the stages captured before are shown")
    elif outcome.killed_for == "cancelled":
        kind, message = ErrorKind.CANCELLED, "the job was cancelled"
    elif outcome.killed_for == "worker":
        kind, message = ErrorKind.WORKER_DIED, "the worker process died; it will be restarted"
    elif outcome.started is None:  # the user's code never ran: torchbolt's own failure
        kind = ErrorKind.WORKER_ERROR
        message = (f"the job process ended before the script started (exit code {code}): "
                   "torchbolt could not set it up")
    elif code is not None and code < 0:
        name = signal.Signals(-code).name
        kind, message = ErrorKind.CRASH, f"the worker process crashed with {name}{where}"
    else:
        kind = ErrorKind.EXITED
        message = (f"the script ended the worker process with exit code {code} (os._exit?) "
                   "before it finished")
    return kind.error(message, line, traceback=fault[-4000:])
