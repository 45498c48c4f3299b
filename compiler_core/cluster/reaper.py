"""Jobs whose worker slot died (SIGKILL, a lost host): retried once on another slot, or failed.

RQ itself notices an abandoned job only when the job's own time limit (plus a minute) has
passed, minutes later. A slot here renews a 10 s heartbeat key every second, so any process that
calls `reap` (every slot and every web server do, every few seconds) sees a dead slot's job
within ~15 s. A slot must stay silent for `CONFIRM_S` more (after a Redis restart every key with
a TTL may have expired while the slots are alive and about to beat again); then the first to
claim it (SET NX) queues it again as attempt 2 when a live slot of its environment is left, else
publishes a final `WorkerDied` result on the run's stream.
"""

from __future__ import annotations

import json
import time

from ..errors import ErrorKind
from ..supervisor.job import empty_result
from . import protocol

MAX_ATTEMPTS = 2
CLAIM_TTL_S = 3600
CONFIRM_S = 3.0


def slot_of(worker_name: str | None) -> str | None:
    """The slot a RQ worker belongs to (slots name their RQ workers SLOT.N)."""
    return worker_name.rsplit(".", 1)[0] if worker_name and "." in worker_name else None


def live_slots(conn, env_id: str) -> int:
    count = 0
    for key in conn.scan_iter(match=protocol.slot_key("*"), count=200):
        value = conn.get(key)
        if value and json.loads(value).get("env_id") == env_id:
            count += 1
    return count


def job_timeout(options: dict) -> int:
    """How long RQ lets an attempt run: the job's own time limit and 5 minutes to start."""
    return int(options["timeout"]) + 300


def enqueue(conn, env_id: str, run_id: str, key: str, source: str, options: dict,
            attempt: int, pipeline=None):
    """Queue attempt `attempt` of a run on its environment's RQ queue (JSON, never pickle);
    `pipeline`: as part of that transaction (fairness.py hands runs over this way)."""
    from rq import Queue
    from rq.serializers import JSONSerializer
    queue = Queue(protocol.queue_name(env_id), connection=conn, serializer=JSONSerializer)
    return queue.enqueue("compiler_core.cluster.slot.run_remote", run_id, key, source, options,
                         attempt, job_id=f"{run_id}-{attempt}", job_timeout=job_timeout(options),
                         result_ttl=60, failure_ttl=protocol.RUN_TTL_S, pipeline=pipeline)


def reap(conn, env_ids) -> int:
    """Handle every running job of these environments whose slot is dead; returns how many."""
    from rq import Queue
    from rq.job import Job, JobStatus
    from rq.serializers import JSONSerializer
    handled = 0
    for env_id in env_ids:
        queue = Queue(protocol.queue_name(env_id), connection=conn, serializer=JSONSerializer)
        registry = queue.started_job_registry
        for job_id in registry.get_job_ids(cleanup=False):
            job = Job.fetch(job_id, connection=conn, serializer=JSONSerializer) \
                if Job.exists(job_id, connection=conn) else None
            slot = slot_of(job.worker_name) if job else None
            if slot is None or not _confirmed_dead(conn, slot):
                continue
            if not conn.set(f"torchbolt:reaped:{job_id}", 1, nx=True, ex=CLAIM_TTL_S):
                continue
            registry.remove_executions(job)
            job.set_status(JobStatus.FAILED)
            _retry_or_fail(conn, env_id, slot, *job.args)
            handled += 1
    return handled


def _confirmed_dead(conn, slot: str) -> bool:
    """True once `slot` has had no heartbeat for CONFIRM_S since this was first noticed."""
    suspect = f"torchbolt:silent:{slot}"
    if conn.exists(protocol.slot_key(slot)):
        conn.delete(suspect)
        return False
    conn.set(suspect, time.time(), nx=True, ex=CLAIM_TTL_S)
    return time.time() - float(conn.get(suspect) or time.time()) >= CONFIRM_S


def _retry_or_fail(conn, env_id: str, slot: str, run_id: str, key: str, source: str,
                   options: dict, attempt: int) -> None:
    if attempt < MAX_ATTEMPTS and live_slots(conn, env_id) and \
            not conn.exists(protocol.cancel_key(run_id)):
        conn.xadd(protocol.run_key(run_id), protocol.entry("retry", {
            "message": f"its worker ({slot}) stopped answering; running it again elsewhere",
            "attempt": attempt + 1}))
        enqueue(conn, env_id, run_id, key, source, options, attempt + 1)
        return
    why = ("and on a second worker too" if attempt >= MAX_ATTEMPTS
           else "and no other worker of this environment is connected")
    error = ErrorKind.WORKER_DIED.error(
        f"the worker running this job ({slot}) died or lost its connection, {why}; "
        "the job did not finish (submit it again)")
    protocol.end_run(conn, run_id, key, empty_result(error))
