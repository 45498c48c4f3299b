"""One compile job as the web layer sees it: status, the live event list, records, the result.

Events are append-only and numbered, so an SSE client that reconnects resumes where it was
(`Last-Event-ID`). Event types: `status` (queued / running), `stage` (one per stage of a compile
id, as its first record arrives), `done` (the last one; the client then fetches the job).
"""

from __future__ import annotations

import threading
import time
import uuid

from compiler_core.result import build_result
from compiler_core.stages import RECORD_STAGE


class Job:
    def __init__(self, key: str, source: str, options: dict):
        self.id = uuid.uuid4().hex[:16]
        self.key = key
        self.source = source
        self.options = options
        self.status = "queued"
        self.result: dict | None = None
        self.message: str | None = None  # why a job failed without any result
        self.cached = False
        self.cancel = threading.Event()
        self.created = time.monotonic()
        self.finished: float | None = None
        self.user_file: str | None = None
        self.events: list[dict] = []
        self._records: list[dict] = []
        self._stages_seen: set[tuple] = set()
        self._partial: tuple[int, dict] | None = None
        self._changed = threading.Condition()

    # -- producer side (the job's runner thread)
    def emit(self, event: dict) -> None:
        with self._changed:
            self.events.append(event)
            self._changed.notify_all()

    def set_running(self, user_file: str) -> None:
        self.status, self.user_file = "running", user_file
        self.emit({"type": "status", "status": "running"})

    def on_record(self, record: dict) -> None:
        """Called by the worker for every record, live."""
        with self._changed:
            self._records.append(record)
        stage = RECORD_STAGE.get(record["name"])
        if stage and (record["compile_id"], stage) not in self._stages_seen:
            self._stages_seen.add((record["compile_id"], stage))
            self.emit({"type": "stage", "stage": stage, "compile_id": record["compile_id"],
                       "t": record["t"]})

    def finish(self, result: dict | None, message: str | None = None,
               cached: bool = False) -> None:
        self.result, self.message, self.cached = result, message, cached
        error = result.get("error") if result else {"type": "ServerError", "message": message}
        self.status = "failed" if error else "done"
        self.finished = time.monotonic()
        self.emit({"type": "done", "status": self.status, "key": self.key, "cached": cached,
                   "error": error and {k: error.get(k) for k in ("type", "message", "line")}})

    # -- consumer side (request threads)
    @property
    def is_finished(self) -> bool:
        return self.finished is not None

    def events_after(self, index: int, timeout: float) -> list[dict]:
        """Events numbered > index; waits up to `timeout` seconds for one when there is none."""
        with self._changed:
            if len(self.events) <= index + 1 and not self.is_finished:
                self._changed.wait(timeout)
            return self.events[index + 1:]

    def current_result(self) -> dict | None:
        """The result, or while running one built from the records so far (`partial: true`)."""
        if self.result is not None or self.user_file is None:
            return self.result
        with self._changed:
            records = list(self._records)
        if self._partial is None or self._partial[0] != len(records):
            self._partial = (len(records), {**build_result(records, self.user_file),
                                            "partial": True})
        return self._partial[1]

    def to_json(self) -> dict:
        return {"ok": True, "job": self.id, "key": self.key, "status": self.status,
                "cached": self.cached, "message": self.message,
                "elapsed_s": round((self.finished or time.monotonic()) - self.created, 3),
                "result": self.current_result()}
