"""What web servers and worker slots agree on in Redis (every key starts with `torchbolt`).

    torchbolt:slot:NAME      a live slot's heartbeat: its environment, whether busy (10 s TTL)
    torchbolt-ENV            the RQ queue of one environment (ENV: `environment_id`)
    torchbolt:run:RUN        the run's stream: queued, started, record ..., retry, result
    torchbolt:active:KEY     the run now queued or running for a content key (shared by servers)
    torchbolt:cancel:RUN     set when the last handle of a run was cancelled
    torchbolt:handle:ID      a submit's handle, so any web server can answer for its job id
    torchbolt:result:KEY     the share store (a hash: source, options, result, created)
    torchbolt:leases:CLIENT  a client's queued or running submits, as leases (leases.py)
    torchbolt:fair:ENV[:...] runs waiting for a slot of ENV, client by client (fairness.py)

A run's stream is its lifecycle: `queued` (what it was queued with), then its slot's job's
steps as the `Job` tells its mirror (supervisor/job.py): `started` (the script's path inside
the job), one `record` per record, and a final `result` (`end_run` publishes it instead for a
run whose slot died or that never reached one); `retry` when a dead slot's run is queued again
(reaper.py). A web server takes a `Job` of its own through the same steps, so partial results
and stage events are the same as with a local worker. Entries hold zlib-compressed JSON.
"""

from __future__ import annotations

import hashlib
import json
import queue
import threading
import time
import zlib
from urllib.parse import urlsplit, urlunsplit

HEARTBEAT_TTL_S = 10  # a slot silent this long is dead (the reaper then retries its job)
HEARTBEAT_EVERY_S = 1.0
RUN_TTL_S = 7200  # a run's stream and active marker; handles live an hour like local ones
HANDLE_TTL_S = 3600
IDENTITY = ("torch", "triton", "device", "device_name")


def redact(url: str) -> str:
    """The broker URL without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def connect(url: str, blocking: bool = False):
    """A Redis client for `url` (redis://[:PASSWORD@]HOST:PORT/DB). `blocking`: no read
    timeout, for RQ's long blocking dequeue; else reads give up after 5 s."""
    import redis
    return redis.Redis.from_url(url, socket_connect_timeout=2,
                                socket_timeout=None if blocking else 5,
                                health_check_interval=10)


def broker_errors() -> tuple:
    """The exceptions that mean Redis cannot be reached (or is still loading its data)."""
    import redis
    return (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
            redis.exceptions.BusyLoadingError)


def environment_identity(environment: dict) -> dict:
    return {name: environment.get(name) for name in IDENTITY}


def environment_id(environment: dict) -> str:
    canonical = json.dumps(environment_identity(environment), sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def queue_name(env_id: str) -> str:
    return f"torchbolt-{env_id}"


def slot_key(name: str) -> str:
    return f"torchbolt:slot:{name}"


def run_key(run_id: str) -> str:
    return f"torchbolt:run:{run_id}"


def active_key(key: str) -> str:
    return f"torchbolt:active:{key}"


def cancel_key(run_id: str) -> str:
    return f"torchbolt:cancel:{run_id}"


def handle_key(handle_id: str) -> str:
    return f"torchbolt:handle:{handle_id}"


def result_key(key: str) -> str:
    return f"torchbolt:result:{key}"


def lease_key(client: str) -> str:
    return f"torchbolt:leases:{client}"


def fair_key(env_id: str, part: str = "") -> str:
    return f"torchbolt:fair:{env_id}" + (f":{part}" if part else "")


def pack(data) -> bytes:
    return zlib.compress(json.dumps(data).encode("utf-8"), 1)


def unpack(blob: bytes):
    return json.loads(zlib.decompress(blob))


def entry(kind: str, data=None) -> dict:
    return {"kind": kind, "data": pack(data)}


def entry_kind(fields: dict) -> str:
    return fields[b"kind"].decode()


def read_entry(fields: dict) -> tuple[str, object]:
    return entry_kind(fields), unpack(fields[b"data"])


def run_origin(conn, run_id: str) -> dict | None:
    """What a run was queued with ({key, source, options, env_id}): its stream's first entry."""
    first = conn.xrange(run_key(run_id), count=1)
    return read_entry(first[0][1])[1] if first else None


def release_active(conn, key: str, run_id: str) -> None:
    """Forget `key`'s active run, unless a newer run took it over meanwhile."""
    if conn.get(active_key(key)) == run_id.encode():
        conn.delete(active_key(key))


def end_run(conn, run_id: str, key: str, result: dict) -> None:
    """Publish a run's final result for it (its slot cannot: dead, or never started it)."""
    conn.xadd(run_key(run_id), entry("result", result))
    conn.expire(run_key(run_id), RUN_TTL_S)
    release_active(conn, key, run_id)


class Publisher:
    """Appends entries to run streams from a thread of its own, in order, retrying while Redis
    is unreachable (a restart), so the job's supervisor never blocks on the network."""

    def __init__(self, conn) -> None:
        self._conn = conn
        self._queue: queue.Queue = queue.Queue()
        self._pending = 0
        self._sent = threading.Condition()
        threading.Thread(target=self._send, daemon=True, name="torchbolt-publisher").start()

    def put(self, run_id: str, kind: str, data=None) -> None:
        with self._sent:
            self._pending += 1
        self._queue.put((run_key(run_id), entry(kind, data)))

    def drain(self, timeout: float) -> bool:
        """Wait until everything put so far is in Redis; False on timeout."""
        with self._sent:
            return self._sent.wait_for(lambda: self._pending == 0, timeout)

    def _send(self) -> None:
        while True:
            batch = [self._queue.get()]
            while not self._queue.empty():
                batch.append(self._queue.get())
            while True:
                try:
                    with self._conn.pipeline(transaction=False) as pipe:
                        for stream, fields in batch:
                            pipe.xadd(stream, fields)
                            pipe.expire(stream, RUN_TTL_S)
                        pipe.execute()
                    break
                except broker_errors():
                    time.sleep(0.5)
            with self._sent:
                self._pending -= len(batch)
                self._sent.notify_all()
