"""A job handle: one script run on a `Worker`, seen from the caller's side.

    job = Job(source, Options(device="cpu"), listener=print)
    worker.execute(job)          # blocks; from another thread: job.cancel(), job.partial_result()
    job.result                   # the final result document

Events, in order, each passed to `listener` as it happens: `{"type": "status", "status":
"running"}` when the script starts, then one `{"type": "stage", "stage", "compile_id", "t"}` per
stage of a compile id as its first record arrives (the stage registry says which record
announces which stage). The partial result is built from the records so far, so a page can show
every stage captured before the job ends.
"""

from __future__ import annotations

import threading

from ..options import Options
from ..report.result import build_result
from ..report.stages import RECORD_STAGE


class Job:
    def __init__(self, source: str, options: Options | None = None, user_file: str | None = None,
                 listener=None):
        self.source = source
        self.options = options or Options()
        self.requested_file = user_file  # its base name names the script inside the job
        self.user_file: str | None = None  # the script's path as the job sees it, once started
        self.result: dict | None = None
        self.events: list[dict] = []
        self._listener = listener
        self._records: list[dict] = []
        self._announced: set[tuple] = set()
        self._partial: tuple[int, dict] | None = None
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
        """Grows with each record, and once more when the final result is set."""
        return len(self._records) + (self.result is not None)

    def partial_result(self) -> dict | None:
        """The final result, or while running one built from the records so far
        (`"partial": true`); None before the script started."""
        if self.result is not None or self.user_file is None:
            return self.result
        with self._lock:
            records = list(self._records)
        # Built outside the lock, so the worker's thread keeps adding records meanwhile.
        cached = self._partial
        if cached is None or cached[0] != len(records):
            cached = (len(records), {**build_result(records, self.user_file), "partial": True})
            self._partial = cached
        return cached[1]

    # -- the worker's side
    def started(self, user_file: str) -> None:
        self.user_file = user_file
        self._emit({"type": "status", "status": "running"})

    def add_record(self, record: dict) -> None:
        with self._lock:
            self._records.append(record)
        stage = RECORD_STAGE.get(record["name"])
        if stage and (record["compile_id"], stage) not in self._announced:
            self._announced.add((record["compile_id"], stage))
            self._emit({"type": "stage", "stage": stage, "compile_id": record["compile_id"],
                        "t": record["t"]})

    def finish(self, result: dict) -> None:
        self.result = result

    def _emit(self, event: dict) -> None:
        self.events.append(event)
        if self._listener:
            self._listener(event)


def empty_result(error: dict | None = None) -> dict:
    """A result with no stages, e.g. for a job cancelled before it started."""
    return build_result([], "", {"error": error})
