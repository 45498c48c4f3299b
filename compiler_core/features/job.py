"""The job as a whole: its environment, its error, whether it finished, its notes, what
torchbolt's replays printed, and the stage errors the job itself recorded. The records come from
the runner (`runtime/runner.py`) and the steps after the script."""

from __future__ import annotations

from ..limits import limit
from ..parsers.common import is_int
from .spec import INTEGER, TEXT, Feature, Part, record, step_error


def _error(run) -> dict | None:
    """The job's own error record, else what the supervisor saw."""
    found = run.first("error")
    if found is None:
        return run.run.get("error")
    line = found["meta"].get("line")
    return {**found["meta"], "line": line if is_int(line) else None}


def _notes(run) -> list[str]:
    texts = [str(r["meta"].get("text", "")) for r in run.all("note")]
    most, longest = limit("notes_per_job"), limit("note_chars")
    if len(texts) > most:
        run.truncated.append({"limit": "notes_per_job",
                              "message": f"{len(texts) - most} notes past the first {most} dropped"})
    long = [t for t in texts[:most] if len(t) > longest]
    if long:
        run.truncated.append({"limit": "note_chars", "message": f"{len(long)} notes cut to "
                                                               f"{longest:,} characters"})
    return [t[:longest] for t in texts[:most]]


def replay_output(run) -> dict | None:
    """What torchbolt's replays (timings, views) printed, kept apart from the script's stdout."""
    chunks = [r["meta"] for r in run.all("replay_output")]
    if not chunks:
        return None
    return {"bytes": sum(int(c["bytes"]) for c in chunks),
            "lines": sum(int(c["lines"]) for c in chunks),
            "head": "".join(str(c["head"]) for c in chunks)[:8192]}


def _recorded_stage_errors(run) -> None:
    """The stage errors the job recorded (a hook or a step after the script that failed), their
    fields forced to text (the job's record names its step `stage`)."""
    run.result["stage_errors"] += [
        step_error(r["compile_id"], str(r["meta"].get("stage", "?"))[:200],
                   str(r["meta"].get("message", ""))[:2000]) for r in run.all("stage_error")]


FEATURE = Feature(
    "job",
    records=(record("environment"), record("error", type=TEXT, message=TEXT), record("note"),
             record("phase"), record("run_end"), record("stage_error"),
             record("replay_output", bytes=INTEGER, lines=INTEGER)),
    run_parts=(Part(None, _recorded_stage_errors, name="stage_errors"),
               Part("environment", lambda run: dict((run.first("environment") or {"meta": {}})
                                                    ["meta"]), {}),
               Part("error", _error),
               Part("finished", lambda run: run.first("run_end") is not None, False),
               Part("notes", _notes, []),
               Part("replay_output", replay_output)))
