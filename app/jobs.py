"""Runs and handles: what executes once, and what each submitter holds.

A *run* is one execution of one content key, shared by everyone who submitted that code: status,
the live event list, records, the result. A *handle* is one submit: its own id (the `job` of the
API), the client that made it, and whether that client cancelled it. Cancelling a handle detaches
it from its run (the handle ends as failed/Cancelled at once); the run itself is cancelled by the
manager only when no live handle is left.

Events are append-only and numbered, so an SSE client that reconnects resumes where it was
(`Last-Event-ID`). Event types: `status` (queued / running), `stage` (one per stage of a compile
id, as its first record arrives), `done` (the last one; the client then fetches the job). A
detached handle's events are its run's up to the detach, then its own `done`.
"""

from __future__ import annotations

import threading
import time
import uuid

from compiler_core import ErrorKind, Job, Options, empty_result


def brief(error: dict | None) -> dict | None:
    return error and {k: error.get(k) for k in ("type", "message", "line")}


class Run:
    def __init__(self, key: str, source: str, options: Options):
        self.key = key
        self.source = source
        self.options = options.to_dict()
        self.job = Job(source, options, listener=self.emit)  # the engine's handle, once it runs
        self.status = "queued"
        self.result: dict | None = None
        self.message: str | None = None  # why a run failed without any result
        self.cached = False
        self._load = None  # a stored run's: reads its result again from the server's store
        self.handles: list[Handle] = []
        self.finished: float | None = None
        self.events: list[dict] = []
        self.changed = threading.Condition()

    # -- producer side (the run's runner thread)
    def emit(self, event: dict) -> None:
        """Append an event (the engine's job calls it for `running` and each stage)."""
        with self.changed:
            if event.get("status") == "running":
                self.status = "running"
            self.events.append(event)
            self.changed.notify_all()

    @classmethod
    def stored(cls, key: str, options: Options, result: dict, load) -> "Run":
        """A finished run answered from the store: it holds the key, not the result (`load(key)`
        reads it, from the server's shared cache) nor the source."""
        run = cls(key, "", options)
        run._load = load
        run.finish(result, cached=True)
        return run

    @property
    def is_final(self) -> bool:
        return self.result is not None or self._load is not None

    def finish(self, result: dict | None, message: str | None = None,
               cached: bool = False) -> None:
        self.result = None if self._load else result
        self.message, self.cached = message, cached
        error = result.get("error") if result else ErrorKind.SERVER_ERROR.error(message)
        self.status = "failed" if error else "done"
        self.finished = time.monotonic()
        self.emit({"type": "done", "status": self.status, "key": self.key, "cached": cached,
                   "error": brief(error)})

    # -- consumer side (request threads)
    @property
    def is_finished(self) -> bool:
        return self.finished is not None

    def live_handles(self) -> list[Handle]:
        return [h for h in self.handles if not h.detached]

    def current_result(self) -> dict | None:
        """The result, or while running one built from the records so far (`partial: true`)."""
        if self._load is not None:
            stored = self._load(self.key)
            return stored and stored["result"]
        return self.result if self.result is not None else self.job.partial_result()


class Handle:
    """One submit of a run; its id is the API's job id (unguessable: it is what cancels)."""

    def __init__(self, run: Run, client: str):
        self.id = uuid.uuid4().hex
        self.run = run
        self.client = client
        self.created = time.monotonic()
        self.detached: float | None = None  # when its client cancelled it
        self._cut = 0  # how many of the run's events this handle saw before it was detached
        self._result: dict | None = None
        self._done: dict | None = None
        run.handles.append(self)

    @property
    def key(self) -> str:
        return self.run.key

    @property
    def finished(self) -> float | None:
        return self.detached or self.run.finished

    @property
    def is_finished(self) -> bool:
        return self.finished is not None

    @property
    def cached(self) -> bool:
        return self.run.cached and not self.detached

    @property
    def status(self) -> str:
        return "failed" if self.detached else self.run.status

    def detach(self, message: str) -> None:
        """This client cancelled: end this handle now with what its run had so far."""
        error = ErrorKind.CANCELLED.error(message)
        partial = self.run.current_result() or empty_result()
        self._result = {**partial, "error": error}
        self._result.pop("partial", None)  # final for this handle
        self._done = {"type": "done", "status": "failed", "key": self.key, "cached": False,
                      "error": brief(error)}
        with self.run.changed:
            self._cut, self.detached = len(self.run.events), time.monotonic()
            self.run.changed.notify_all()

    def events_after(self, index: int, timeout: float) -> list[dict]:
        """Events numbered > index; waits up to `timeout` seconds for one when there is none."""
        with self.run.changed:
            if len(self.run.events) <= index + 1 and not self.is_finished:
                self.run.changed.wait(timeout)
            if self.detached:
                return (self.run.events[:self._cut] + [self._done])[index + 1:]
            return self.run.events[index + 1:]

    def current_result(self) -> dict | None:
        return self._result if self.detached else self.run.current_result()

    @property
    def version(self) -> str:
        """Changes whenever `current_result()` may have: a client that saw this version has
        seen that result (a cursor for polling, app/transport.py)."""
        if self.detached:
            return "cancelled"
        return "final" if self.run.is_final else f"r{self.run.job.version}"

    def to_json(self, with_result: bool = True) -> dict:
        run = self.run
        return {"ok": True, "job": self.id, "key": self.key, "status": self.status,
                "cached": self.cached,
                "message": None if self.detached else run.message,
                "elapsed_s": round((self.finished or time.monotonic()) - self.created, 3),
                "result": self.current_result() if with_result else None}
