"""Runs and handles: what executes once, and what each submitter holds.

A *run* is one execution of one content key, shared by everyone who submitted that code: status,
the live event list, records, the result; each attempt of it is one engine `Job`. A *handle* is
one submit: its own id (`handle` in the API's answers; `job` too, the same id, kept for clients
written before), the client that made it, and whether that client cancelled it. Cancelling a
handle detaches it from its run (the handle ends as failed/Cancelled at once); the run itself
is cancelled by the manager only when no live handle is left.

Events are append-only and numbered, so an SSE client that reconnects resumes where it was
(`Last-Event-ID`). Event types: `status` (queued / running), `stage` (one per stage of a compile
id, as its first record arrives), `done` (the last one; the client then fetches the result). A
detached handle's events are its run's up to the detach, then its own `done`.

The lifecycle is stated once, here, for both managers (`manager.RunManager` with local workers,
`broker.BrokerManager` with Redis): the states and where each may go (`MOVES`), the `Lifecycle`
that moves on events and numbers them, and `done_event`, the last event of a run or a handle.
A run's engine `Job` tells it `running` and each stage (the job's listener, fed by a local
worker or by the run's stream); the manager tells it `queued` (`Run.emit`), a retry
(`Run.requeue`) and its end (`Run.finish`: through `RunManager.finish` for a queued run, at
once for a stored answer, `Run.stored`).

What a run costs the server is bounded by what it is allowed: its engine job builds each partial
and the final result in a process of its own under the build limits (`bounded_build`), and once
the run ended with a stored result it keeps only its key (its records, partial and final
results are freed; its handles read the result through the store's bounded cache), however long
its handles live.
"""

from __future__ import annotations

import threading
import time
import uuid

from compiler_core import ErrorKind, Job, Options, bounded_build, empty_result

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
ENDS = (DONE, FAILED)
# Where each state may go. A cancel ends `failed` with a `Cancelled` error (the API has these
# four statuses). A retry tells `queued` again, but a run that started stays `running` until it
# ends, as the API always said; nothing leaves an end.
MOVES = {QUEUED: (RUNNING, *ENDS), RUNNING: ENDS, DONE: (), FAILED: ()}


def brief(error: dict | None) -> dict | None:
    return error and {k: error.get(k) for k in ("type", "message", "line")}


def done_event(key: str, error: dict | None, cached: bool = False) -> dict:
    """The last event of a run or of a detached handle; its status is the end state."""
    return {"type": "done", "status": FAILED if error else DONE, "key": key, "cached": cached,
            "error": brief(error)}


class Lifecycle:
    """A run's state and the numbered events that told of it; readers wait on `changed`."""

    def __init__(self) -> None:
        self.state = QUEUED
        self.events: list[dict] = []
        self.phase: dict | None = None  # the latest `phase` event: a poll says it too
        self.ended: float | None = None  # when it moved to an end state (monotonic)
        self.changed = threading.Condition()

    def tell(self, event: dict) -> None:
        """Append an event; a `status` or `done` event moves the state where `MOVES` allows."""
        with self.changed:
            if event.get("status") in MOVES[self.state]:
                self.state = event["status"]
                if self.state in ENDS:
                    self.ended = time.monotonic()
            self.events.append(event)
            if event.get("type") == "phase":
                self.phase = event
            self.changed.notify_all()


class Run:
    def __init__(self, key: str, source: str, options: Options):
        self.key = key
        self.source = source
        self.options = options  # kept as made: a retry's job gets the same options
        self.life = Lifecycle()
        self.job = self._job(options)  # the engine job that runs it (a retry gets a new one)
        self.result: dict | None = None
        self.message: str | None = None  # why a run failed without any result
        self.cached = False
        self._load = None  # a stored run's: reads its result again from the server's store
        self.handles: list[Handle] = []

    @property
    def status(self) -> str:
        return self.life.state

    @property
    def finished(self) -> float | None:
        return self.life.ended

    # -- producer side (the manager, and the engine job's listener)
    def emit(self, event: dict) -> None:
        """Tell the run's lifecycle an event (`queued`, then the engine's `running` and stages)."""
        self.life.tell(event)

    def requeue(self, message: str) -> None:
        """Its worker died and it runs again elsewhere: a fresh engine job for the next
        attempt's records, and `queued` again saying why."""
        self.job = self._job(self.options)
        self.emit({"type": "status", "status": QUEUED, "message": message})

    def _job(self, options: Options) -> Job:
        return Job(self.source, options, listener=self.emit, build=bounded_build)

    @classmethod
    def stored(cls, key: str, options: Options, result: dict, load) -> "Run":
        """A finished run answered from the store: it holds the key, not the result (`load(key)`
        reads it, from the server's shared cache) nor the source."""
        run = cls(key, "", options)
        run.finish(result, cached=True, load=load)
        return run

    @property
    def is_final(self) -> bool:
        return self.result is not None or self._load is not None

    def finish(self, result: dict | None, message: str | None = None,
               cached: bool = False, load=None) -> None:
        """End the run. `load`: its result is in the store, and `load(key)` reads it from
        there (the run keeps its key only); else the run keeps `result`. Either way its engine
        job's records and partial result are freed."""
        self._load = load or self._load
        self.result = None if self._load else result
        self.job.release()
        self.message, self.cached = message, cached
        error = result.get("error") if result else ErrorKind.SERVER_ERROR.error(message)
        self.emit(done_event(self.key, error, cached))

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
    """One submit of a run; its id is the API's handle id (unguessable: it is what cancels)."""

    def __init__(self, run: Run, client: str, handle_id: str | None = None):
        self.id = handle_id or uuid.uuid4().hex
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
        return FAILED if self.detached else self.run.status

    def detach(self, message: str) -> None:
        """This client cancelled: end this handle now with what its run had so far."""
        error = ErrorKind.CANCELLED.error(message)
        partial = self.run.current_result() or empty_result()
        self._result = {**partial, "error": error}
        self._result.pop("partial", None)  # final for this handle
        self._done = done_event(self.key, error)
        life = self.run.life
        with life.changed:
            self._cut, self.detached = len(life.events), time.monotonic()
            life.changed.notify_all()

    def events_after(self, index: int, timeout: float) -> list[dict]:
        """Events numbered > index; waits up to `timeout` seconds for one when there is none."""
        life = self.run.life
        with life.changed:
            if len(life.events) <= index + 1 and not self.is_finished:
                life.changed.wait(timeout)
            if self.detached:
                return (life.events[:self._cut] + [self._done])[index + 1:]
            return life.events[index + 1:]

    def current_result(self) -> dict | None:
        return self._result if self.detached else self.run.current_result()

    @property
    def version(self) -> str:
        """Changes whenever `current_result()` may have: a client that saw this version has
        seen that result (a cursor for polling, app/transport.py). "final" only once the run
        has ended: its result is kept a moment before its done event (`Run.finish` releases the
        engine job in between), and a poll in that moment that took "final" with status
        `running` would be answered `unchanged`, without the result, once it is done."""
        if self.detached:
            return "cancelled"
        run = self.run
        return "final" if run.is_final and run.is_finished else f"r{run.job.version}"

    def named(self) -> dict:
        """How an answer names this handle: `handle`, and `job`, the same id, kept for clients
        written before `handle` (README's API section)."""
        return {"handle": self.id, "job": self.id}

    def to_json(self, with_result: bool = True) -> dict:
        run = self.run
        return {"ok": True, **self.named(), "key": self.key,
                "status": self.status, "cached": self.cached,
                "message": None if self.detached else run.message,
                "elapsed_s": round((self.finished or time.monotonic()) - self.created, 3),
                "phase": None if self.is_finished else run.life.phase,
                "result": self.current_result() if with_result else None}
