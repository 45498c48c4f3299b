"""The one run lifecycle (app/runs.py) both managers share: states move only as `MOVES` allows,
a detached handle ends alone, a slot's job steps replay into a follower's job, and the embedded
manager ends every run through `finish`. No engine processes: a stand-in worker runs the jobs."""

from __future__ import annotations

import threading
import time

from app.manager import RunManager
from app.runs import DONE, FAILED, QUEUED, RUNNING, Handle, Run, done_event
from app.store import Store
from compiler_core import ErrorKind, Job, Options, empty_result

RECORD = {"name": "dynamo_output_graph", "compile_id": "0/0", "t": 0.1, "meta": {},
          "payload": "graph():\n    return ()\n"}
USER_FILE = "/job/main.py"


class StandInWorker:
    """A `compiler_core.Worker` without processes: each job starts, adds one stage's record and
    ends (Cancelled if it was cancelled), once `go` is set."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.go.set()

    def start(self) -> "StandInWorker":
        return self

    def wait_ready(self) -> None:
        pass

    def close(self) -> None:
        pass

    def run(self, source: str, options: Options | None = None) -> dict:
        return {"environment": {"torch": "stand-in", "triton": None, "device": "cpu",
                                "device_name": "cpu"}}

    def execute(self, job: Job) -> Job:
        self.go.wait(30)
        job.started(USER_FILE)
        job.add_record(dict(RECORD))
        job.finish(empty_result(ErrorKind.CANCELLED.error("cancelled") if job.cancelled else None))
        return job


def wait_until(condition, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_run_moves_only_as_the_table_allows():
    run = Run("k", "print(1)\n", Options())
    run.emit({"type": "status", "status": QUEUED, "position": 1})
    assert run.status == QUEUED and not run.is_finished
    run.job.started(USER_FILE)
    assert run.status == RUNNING
    first = run.job
    run.requeue("its worker died")  # a retry: a fresh job, `queued` told, still running
    assert run.job is not first and run.status == RUNNING
    run.job.started(USER_FILE)
    run.finish(empty_result())
    assert run.status == DONE and run.is_finished
    run.emit({"type": "status", "status": RUNNING})  # nothing leaves an end
    assert run.status == DONE
    assert [(e["type"], e.get("status")) for e in run.life.events] == [
        ("status", QUEUED), ("status", RUNNING), ("status", QUEUED), ("status", RUNNING),
        ("done", DONE), ("status", RUNNING)]
    assert run.life.events[4] == done_event("k", None)


def test_a_detached_handle_ends_alone_and_its_run_goes_on():
    run = Run("k", "print(1)\n", Options())
    stays, leaves = Handle(run, "10.0.0.1"), Handle(run, "10.0.0.2")
    run.job.started(USER_FILE)
    leaves.detach("cancelled")
    assert leaves.status == FAILED and leaves.is_finished
    assert stays.status == RUNNING and not stays.is_finished and run.live_handles() == [stays]
    run.finish(empty_result())
    assert stays.status == DONE
    assert [e["type"] for e in stays.events_after(-1, 0)] == ["status", "done"]
    ended = leaves.events_after(-1, 0)
    assert [e["type"] for e in ended] == ["status", "done"]
    assert ended[-1]["status"] == FAILED and ended[-1]["error"]["type"] == ErrorKind.CANCELLED


def test_a_slot_jobs_steps_replayed_give_the_followers_job_the_same_events():
    steps = []
    slot_job = Job("print(1)\n", Options(), mirror=lambda step, data: steps.append((step, data)))
    slot_job.started(USER_FILE)
    slot_job.add_record(dict(RECORD))
    slot_job.finish(empty_result())
    assert [step for step, _ in steps] == ["started", "record", "result"]
    run = Run("k", "print(1)\n", Options())
    run.job.started(steps[0][1]["user_file"])  # as app/broker.py applies a run's stream
    run.job.add_record(steps[1][1])
    assert run.job.events == slot_job.events
    assert [e.get("stage") for e in run.life.events] == [None, "dynamo_graph"]


def test_the_embedded_manager_ends_every_run_through_finish(tmp_path):
    worker = StandInWorker()
    manager = RunManager(Store(str(tmp_path)), [worker]).start()
    wait_until(manager.environments)  # the start-up probe ran
    worker.go.clear()
    first = manager.submit("print(1)\n", Options(), "10.0.0.1")
    queued = manager.submit("print(2)\n", Options(), "10.0.0.2")  # waits behind the first
    manager.cancel(queued)  # its only handle: the run ends before it started, not stored
    assert queued.status == FAILED and queued.run.status == FAILED and queued.run.is_finished
    assert manager.store.get(queued.key) is None
    worker.go.set()
    wait_until(lambda: first.is_finished)
    assert [(e["type"], e.get("status")) for e in first.run.life.events] == [
        ("status", QUEUED), ("status", RUNNING), ("stage", None), ("done", DONE)]
    assert manager.store.get(first.key)["result"]["error"] is None
    again = manager.submit("print(1)\n", Options(), "10.0.0.3")
    assert again.cached and again.status == DONE and manager.live() == []
