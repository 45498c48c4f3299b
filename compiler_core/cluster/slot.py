"""One worker slot: an RQ `SimpleWorker` process that runs each job on its own warm engine Worker.

Started by `host.py` as `python -m compiler_core.cluster.slot` with its settings in the
environment (the broker URL travels there, never in argv, since argv is world-readable):
TORCHBOLT_BROKER, TORCHBOLT_SLOT (its name) and TORCHBOLT_DEVICE (cpu or cuda); on a GPU its
engine Worker locks that GPU's lock file around each job's timings (see host.py).

At start the slot warms its engine Worker (the sandboxed zygote) and runs a probe job to learn
its environment (torch, triton, device, device name), then heartbeats it every second and takes
jobs from its environment's queue. RQ calls `run_remote` per job, in this process: the job runs
in the sandbox like any other, its steps (start, each record, result: `Job`'s mirror) are
published to the run's stream as they happen, and a cancel flag set by a web server cancels it.
A run's records on the stream are capped at `stream_bytes_per_run` (compressed; past it the job
is stopped, with a RecordLimit error naming it); a job whose records Redis refused (full) is
stopped and ends as BrokerFull (protocol.Publisher).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import socket
import sys
import threading
import time

from ..errors import ErrorKind
from ..limits import limit
from ..options import Options
from ..report.result import build_result
from ..supervisor.job import Job
from ..supervisor.worker import Worker, WorkerError
from . import fairness, protocol
from .reaper import reap

PROBE_SOURCE = "# torchbolt worker's start-up probe: reports its environment\n"
REAP_EVERY_S = 3.0
DRAIN_S = 120  # how long a finished job waits for Redis to take its last entries
_state: "SlotState | None" = None  # this process's slot, for `run_remote` (RQ calls it by name)


class SlotState:
    def __init__(self, name: str, url: str, device: str) -> None:
        self.name = name
        self.conn = protocol.connect(url)
        # On a GPU, each job holds its GPU's lock file for its timings only (see host.py).
        self.worker = Worker().start()
        self.worker.wait_ready()
        self.environment = protocol.environment_identity(
            self.worker.run(PROBE_SOURCE, Options(device=device))["environment"])
        self.env_id = protocol.environment_id(self.environment)
        self.publisher = protocol.Publisher(self.conn, on_full=self.refused)
        self.current: tuple[str, Job] | None = None  # (run id, its job) while one runs

    def refused(self, run_id: str) -> None:
        """Redis is full and refused the run's entries: stop its job (it ends as BrokerFull)."""
        current_run, job = self.current or (None, None)
        if current_run == run_id:
            job.cancel()

    def heartbeat(self) -> None:
        """Say this slot is alive (and what it runs); cancel its job when asked to."""
        run_id, job = self.current or (None, None)
        self.conn.set(protocol.slot_key(self.name), json.dumps({
            **self.environment, "env_id": self.env_id, "host": socket.gethostname(),
            "busy": run_id}), ex=protocol.HEARTBEAT_TTL_S)
        if job and not job.cancelled and self.conn.exists(protocol.cancel_key(run_id)):
            job.cancel()


class RunStream:
    """A job's mirror: each of its steps as an entry of its run's stream (`started` also names
    the slot), its records up to `stream_bytes_per_run` in all: past that the job is stopped."""

    def __init__(self, state: SlotState, run_id: str) -> None:
        self.state, self.run_id = state, run_id
        self.job: Job | None = None
        self.record_bytes = 0

    def __call__(self, step: str, data: dict) -> None:
        if step == "started":
            data = {**data, "slot": self.state.name}
        fields = protocol.entry(step, data)
        if step == "record":
            self.record_bytes += len(fields["data"])
            if self.record_bytes > limit("stream_bytes_per_run"):
                self.job.stop_for("stream_bytes_per_run")
                return
        self.state.publisher.put(self.run_id, fields)


def run_remote(run_id: str, key: str, source: str, options: dict, attempt: int) -> None:
    """RQ's job function: run one attempt of a run here and publish its result."""
    state = _state
    stream = RunStream(state, run_id)
    job = stream.job = Job(source, Options.from_dict(options), mirror=stream)
    if state.conn.exists(protocol.cancel_key(run_id)):
        job.cancel()  # cancelled while queued: the engine ends it before it starts
    state.current = run_id, job
    try:
        state.worker.execute(job)  # publishes the result as it finishes the job
    except WorkerError as exc:
        job.finish(build_result([], "", {"options": options,
                                         "error": ErrorKind.WORKER_ERROR.error(str(exc))}))
    finally:
        state.current = None
    state.publisher.drain(DRAIN_S)
    protocol.release_active(state.conn, key, run_id)


def _keep_alive(state: SlotState) -> None:
    last_reap = 0.0
    while True:
        try:
            state.heartbeat()
            fairness.dispatch(state.conn, state.env_id)  # runs waiting while no server calls it
            if time.monotonic() - last_reap > REAP_EVERY_S:
                last_reap = time.monotonic()
                reap(state.conn, [state.env_id])
        except protocol.broker_errors():
            pass  # Redis is restarting: the next beat tries again
        except Exception as exc:  # never let the heartbeat thread die
            print(f"torchbolt slot {state.name}: heartbeat: {type(exc).__name__}: {exc}",
                  file=sys.stderr, flush=True)
        time.sleep(protocol.HEARTBEAT_EVERY_S)


def main() -> None:
    global _state
    from rq import Queue, SimpleWorker
    from rq.serializers import JSONSerializer
    name, url = os.environ["TORCHBOLT_SLOT"], os.environ.pop("TORCHBOLT_BROKER")
    _state = state = SlotState(name, url, os.environ.get("TORCHBOLT_DEVICE", "cpu"))
    threading.Thread(target=_keep_alive, args=(state,), daemon=True).start()
    env = state.environment
    print(f"torchbolt slot {name}: ready: torch {env['torch']}, {env['device']} "
          f"({env['device_name']}), queue {protocol.queue_name(state.env_id)}", flush=True)
    connection = protocol.connect(url, blocking=True)
    queue = Queue(protocol.queue_name(state.env_id), connection=connection,
                  serializer=JSONSerializer)
    try:
        for number in itertools.count():  # a new RQ worker after each loss of Redis
            worker = SimpleWorker([queue], connection=connection, name=f"{name}.{number}",
                                  serializer=JSONSerializer)
            worker.max_connection_wait_time = 2  # back within 2 s of a Redis restart
            with contextlib.suppress(*protocol.broker_errors()):
                worker.work(logging_level="WARNING")
            if worker._shutdown_requested_date:  # SIGTERM or SIGINT (RQ's warm shutdown)
                break
            time.sleep(1)
    finally:
        state.worker.close()


if __name__ == "__main__":  # run the importable module's main, whose `_state` RQ's calls see
    from compiler_core.cluster.slot import main as slot_main
    slot_main()
