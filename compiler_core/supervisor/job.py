"""A job: one execution of a script on a `Worker`, seen from the caller's side.

    job = Job(source, Options(device="cpu"), listener=print)
    worker.execute(job)          # blocks; from another thread: job.cancel(), job.partial_result()
    job.result                   # the final result document

The worker takes a job through its steps: `started(user_file)`, `add_record(record)` per record,
`finish(result)`. A `mirror(step, data)` is told each one as it is taken (`started` with
`{"user_file"}`, each kept `record`, the `result`): a slot of the Redis fleet publishes them to
its run's stream (cluster/slot.py), and a web server that follows the stream takes a `Job` of
its own through `started` and each record, so both give the same events and partial results.

Events, in order, each passed to `listener` as it happens: `{"type": "status", "status":
"running"}` when the script starts, then one `{"type": "stage", "stage", "compile_id", "t"}` per
stage of a compile id as its first record arrives (the stage registry says which record
announces which stage); a progress marker that is no stage (a graph break, a recompile) comes
as the same event with `marker` naming it (`stage` repeats it for clients written before); and
a `{"type": "phase", "step", "then", "t"}` when a long step begins (the script, the timings,
the views; `then`: the later ones this run still holds). The partial
result is built from the records so far, so a page can show every stage captured before the job
ends, and what the script printed so far (a handle cancelled while the run goes on keeps it).

Records come from the job, so the job keeps at most `records_per_job` of them and
`record_bytes_per_job` bytes (`compiler_core/limits.py`); past either, `over_limit` names the
limit and the worker stops the job. A partial result is rebuilt at most every
`REBUILD_FACTOR` times its last build's duration (and `MIN_REBUILD_S`), so polls never make the
server rebuild a big result back to back, and one build at a time: polls during a build wait
for it and get what it built (never an older result under a newer version).

`build(records, user_file, run)` makes the partial and final results (`build_result` in this
process by default; a server passes one with a budget, `supervisor/builds.py`). Once its owner
keeps the result elsewhere (a server's store), `release()` frees the records and results.
"""

from __future__ import annotations

import ctypes
import json
import threading
import time

from ..limits import limit
from ..options import Options
from ..report.result import build_result
from ..features import RECORD_MARKER, RECORD_STAGE
from ..wire import packed, unpacked


MIN_REBUILD_S = 0.25
REBUILD_FACTOR = 3
PACK_META_CHARS = 4096  # a kept record with a longer meta keeps it as JSON text (wire.packed)
TRIM_AFTER_BYTES = 1 << 20  # a released job that held more records hands freed memory back
_MALLOC_TRIM = getattr(ctypes.CDLL(None), "malloc_trim", None)  # glibc's; None elsewhere


class Job:
    def __init__(self, source: str, options: Options | None = None, user_file: str | None = None,
                 listener=None, mirror=None, build=build_result):
        self.source = source
        self.options = options or Options()
        self.requested_file = user_file  # its base name names the script inside the job
        self.user_file: str | None = None  # the script's path as the job sees it, once started
        self.result: dict | None = None
        self.events: list[dict] = []
        self._listener = listener
        self._mirror = mirror
        self._records: list[dict] = []
        self._announced: set[tuple] = set()
        self._then: list[str] = []  # the later phases, as the latest phase that named them said
        self._partial: tuple[int, dict] | None = None
        self._building = threading.Lock()  # one partial build at a time
        self._final_version: int | None = None  # the version once the result is set
        self.build = build
        self._rebuild_after = 0.0  # monotonic time before which the partial result stands
        self._record_bytes = 0
        self.over_limit: str | None = None  # the record limit the job went past, if any
        self.live_output = None  # () -> {"stdout", "stderr"} so far, set by the worker
        self._cancel = threading.Event()
        self._lock = threading.Lock()

    # -- the caller's side
    def cancel(self) -> None:
        """Stop the job (its result then has a `Cancelled` error); safe from any thread."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    @property
    def version(self) -> int:
        """Changes whenever the partial result would: with the records and what the script
        printed (once more when the final result is set)."""
        if self._final_version is not None:
            return self._final_version
        if self._partial is not None and time.monotonic() < self._rebuild_after:
            return self._partial[0]
        return self._so_far()[2]

    def records(self) -> list[dict]:
        return [unpacked(record) for record in self.kept_records()]

    def kept_records(self) -> list[dict]:
        """The records as kept: a long meta as its JSON text (`build` reads them so)."""
        with self._lock:
            return list(self._records)

    def _so_far(self) -> tuple[list[dict], dict, int]:
        """The records as kept, the output so far and a number that grows with either."""
        records = self.kept_records()
        output = self.live_output() if self.live_output else {}
        return records, output, len(records) + sum(map(len, output.values()))

    def stop_for(self, limit_name: str) -> None:
        """Keep no more records: the job went past `limit_name` (the worker then stops it)."""
        with self._lock:
            self.over_limit = self.over_limit or limit_name

    def partial_result(self) -> dict | None:
        """The final result, or while running one built from the records and output so far
        (`"partial": true`); None before the script started."""
        if self._final_version is not None or self.user_file is None:
            return self.result
        cached = self._partial
        if cached is not None and time.monotonic() < self._rebuild_after:
            return cached[1]
        with self._building:  # a poll during another's build waits for it, and shares it
            cached = self._partial
            if cached is not None and time.monotonic() < self._rebuild_after:
                return cached[1]
            records, output, version = self._so_far()
            if cached is None or cached[0] != version:
                # Built outside the records' lock: the worker's thread keeps adding meanwhile.
                started = time.monotonic()
                cached = (version, {**self.build(records, self.user_file, output),
                                    "partial": True})
                took = time.monotonic() - started
                with self._lock:
                    if self._final_version is None:  # not released while it was built
                        self._partial = cached
                self._rebuild_after = time.monotonic() + max(MIN_REBUILD_S, REBUILD_FACTOR * took)
            return cached[1]

    def release(self) -> None:
        """Forget the records, the partial and the final result (their owner keeps the result
        elsewhere); the version stays, and what is asked of a released job is None."""
        with self._lock:
            if self._final_version is None:
                self._final_version = len(self._records) + 1
            self._records, self._announced = [], set()
            self._partial, self.result, self.live_output = None, None, None
        if self._record_bytes > TRIM_AFTER_BYTES and _MALLOC_TRIM is not None:
            _MALLOC_TRIM(0)  # glibc keeps freed heap for the process; give it back

    # -- the worker's side
    def started(self, user_file: str) -> None:
        self.user_file = user_file
        self._emit({"type": "status", "status": "running"})
        self._step("started", {"user_file": user_file})

    def add_record(self, record: dict) -> bool:
        """Keep one (valid) record; False, keeping nothing, once past a record limit."""
        meta_json = json.dumps(record["meta"], default=str)
        size = len(record["payload"] or "") + len(meta_json)
        with self._lock:
            if self.over_limit is None:
                if len(self._records) >= limit("records_per_job"):
                    self.over_limit = "records_per_job"
                elif self._record_bytes + size > limit("record_bytes_per_job"):
                    self.over_limit = "record_bytes_per_job"
            if self.over_limit is not None:
                return False
            self._records.append(packed(record, meta_json) if len(meta_json) > PACK_META_CHARS
                                 else record)
            self._record_bytes += size
        if record["name"] == "phase" and isinstance(record["meta"].get("step"), str):
            event = phase_event(record, self._then)
            self._then = event["then"]
            self._emit(event)
        marker = RECORD_MARKER.get(record["name"])
        announced = RECORD_STAGE.get(record["name"]) or marker
        if announced and (record["compile_id"], announced) not in self._announced:
            self._announced.add((record["compile_id"], announced))
            event = {"type": "stage", "stage": announced, "compile_id": record["compile_id"],
                     "t": record["t"]}
            self._emit({**event, "marker": marker} if marker else event)
        self._step("record", record)
        return True

    def finish(self, result: dict) -> None:
        self.result = result
        self._final_version = len(self._records) + 1
        self._step("result", result)

    def _emit(self, event: dict) -> None:
        self.events.append(event)
        if self._listener:
            self._listener(event)

    def _step(self, step: str, data: dict) -> None:
        if self._mirror:
            self._mirror(step, data)


def phase_event(record: dict, then_before: list[str]) -> dict:
    """A `phase` record as its event, its texts cut (the job wrote them); a record that does not
    say what comes after it (a step within a phase) keeps `then_before`."""
    then = record["meta"].get("then")
    then = ([step[:200] for step in then[:8] if isinstance(step, str)] if isinstance(then, list)
            else then_before)
    return {"type": "phase", "step": record["meta"]["step"][:200], "then": then, "t": record["t"]}


def empty_result(error: dict | None = None) -> dict:
    """A result with no stages, e.g. for a job cancelled before it started."""
    return build_result([], "", {"error": error})
