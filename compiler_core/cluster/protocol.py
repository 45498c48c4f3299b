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

The `result` is the whole result, so it ends the stream: from then on the stream holds only its
`queued`, its first `started` and its `result` (`end_stream`), for `ENDED_RUN_TTL_S`; a web
server that reads it from there finishes the run with that result. Redis full (its `maxmemory`, with `noeviction`,
README "Scale out") refuses a run's entries: `Publisher` then ends the run as `BrokerFull`.
"""

from __future__ import annotations

import hashlib
import json
import queue
import threading
import time
import zlib
from urllib.parse import urlsplit, urlunsplit

from ..errors import ErrorKind
from ..supervisor.job import empty_result

HEARTBEAT_TTL_S = 10  # a slot silent this long is dead (the reaper then retries its job)
HEARTBEAT_EVERY_S = 1.0
RUN_TTL_S = 7200  # a run's stream and active marker; handles live an hour like local ones
HANDLE_TTL_S = 3600
ENDED_RUN_TTL_S = HANDLE_TTL_S  # an ended run's stream: a handle made before the end may read it
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
    """The exceptions that mean Redis cannot take a command now: it cannot be reached, is still
    loading its data, or is full (its maxmemory, with `noeviction`: `is_full`)."""
    import redis
    return (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
            redis.exceptions.BusyLoadingError, redis.exceptions.OutOfMemoryError)


def is_full(error) -> bool:
    import redis
    return isinstance(error, redis.exceptions.OutOfMemoryError)


def memory_warning(conn) -> str | None:
    """What is unsafe in Redis's memory settings for the fleet, or None (also when Redis cannot
    be asked: down, or CONFIG disabled, as on a managed Redis)."""
    import redis
    try:
        settings = conn.config_get("maxmemory*")
    except (*broker_errors(), redis.exceptions.ResponseError):
        return None
    if int(settings.get("maxmemory", 0)) == 0:
        return ("Redis has no memory cap: every run's stream and result may grow it until the "
                "host runs out; set maxmemory and maxmemory-policy noeviction (README, Scale out)")
    if settings.get("maxmemory-policy") != "noeviction":
        return (f"Redis's maxmemory-policy is {settings.get('maxmemory-policy')}: at its cap it "
                "may evict a live run's stream or the queue; set noeviction (Redis then refuses "
                "writes, and a job it refuses ends as BrokerFull)")
    return None


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


# KEYS[1]: a run's stream; ARGV[1]: 1 keeps its first entry (`queued`) and its first `started`
# if that comes next, 2 its last entry too; ARGV[2]: its TTL. The entries keep their ids, and the
# stream its last id (XSETID), so a reader's cursor stays valid and what is added next comes
# after it. (An entry's fields are `kind`, its kind, then `data`.)
KEEP_ENDS = """
local head = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 2)
if #head == 0 then return 0 end
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local kept = {head[1]}
if head[2] and head[2][2][2] == 'started' and head[2][1] ~= last[1][1] then
  kept[#kept + 1] = head[2]
end
if ARGV[1] == '2' and last[1][1] ~= head[1][1] then kept[#kept + 1] = last[1] end
redis.call('DEL', KEYS[1])
for _, e in ipairs(kept) do redis.call('XADD', KEYS[1], e[1], unpack(e[2])) end
redis.call('XSETID', KEYS[1], last[1][1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return #kept
"""


def end_stream(conn, run_id: str, pipe=None) -> None:
    """A run's stream once its last entry is its result: only what it was queued with, when
    it started and the result are kept (`pipe`: as part of that pipeline)."""
    conn.register_script(KEEP_ENDS)(keys=[run_key(run_id)], args=[2, ENDED_RUN_TTL_S],
                                    client=pipe or conn)


def cut_stream(conn, run_id: str) -> None:
    """A run's stream back to what it was queued with and when it started: Redis refused
    more."""
    conn.register_script(KEEP_ENDS)(keys=[run_key(run_id)], args=[1, RUN_TTL_S])


def end_run(conn, run_id: str, key: str, result: dict) -> None:
    """Publish a run's final result for it (its slot cannot: dead, or never started it)."""
    conn.xadd(run_key(run_id), entry("result", result))
    end_stream(conn, run_id)
    release_active(conn, key, run_id)


class Publisher:
    """Appends entries to run streams from a thread of its own, in order, retrying while Redis
    is unreachable (a restart), so the job's supervisor never blocks on the network. A
    `result` ends its run's stream (`end_stream`).

    Redis full (maxmemory, `noeviction`) refuses a run's entry: the run's stream is cut back to
    its `queued` and `started` entries (which frees what its records held), `on_full(run_id)` is told (the slot
    stops the job), its later entries are dropped and its result becomes a `BrokerFull`
    error, retried until Redis takes it."""

    def __init__(self, conn, on_full=lambda run_id: None) -> None:
        self._conn, self._on_full = conn, on_full
        self._queue: queue.Queue = queue.Queue()
        self._pending = 0
        self._sent = threading.Condition()
        self._full: set[str] = set()  # runs Redis refused, until their result is in
        threading.Thread(target=self._send, daemon=True, name="torchbolt-publisher").start()

    def put(self, run_id: str, fields: dict) -> None:
        """Queue one entry (`entry`) for the run's stream."""
        with self._sent:
            self._pending += 1
        self._queue.put((run_id, fields))

    def drain(self, timeout: float) -> bool:
        """Wait until everything put so far is in Redis; False on timeout."""
        with self._sent:
            return self._sent.wait_for(lambda: self._pending == 0, timeout)

    def _send(self) -> None:
        while True:
            batch = [self._queue.get()]
            while not self._queue.empty():
                batch.append(self._queue.get())
            taken = len(batch)
            while batch:
                try:
                    batch = self._write(batch)
                except broker_errors():
                    pass
                if batch:
                    time.sleep(0.5)
            with self._sent:
                self._pending -= taken
                self._sent.notify_all()

    def _write(self, batch: list) -> list:
        """Write a batch; returns the entries to write again (results Redis refused)."""
        batch = [item for item in map(self._unless_full, batch) if item]
        with self._conn.pipeline(transaction=False) as pipe:
            for run_id, fields in batch:
                pipe.xadd(run_key(run_id), fields)
                if fields["kind"] == "result":
                    end_stream(self._conn, run_id, pipe)
                else:
                    pipe.expire(run_key(run_id), RUN_TTL_S)
            replies = pipe.execute(raise_on_error=False)
        again = []
        for (run_id, fields), reply in zip(batch, replies[::2]):  # each entry's XADD
            if is_full(reply):
                self._refused(run_id)
                if fields["kind"] == "result":
                    again.append((run_id, fields))
            elif fields["kind"] == "result":
                self._full.discard(run_id)
        return again

    def _unless_full(self, item: tuple) -> tuple | None:
        """The entry to write for a run Redis refused before: its result as `BrokerFull`,
        nothing else."""
        run_id, fields = item
        if run_id not in self._full:
            return item
        if fields["kind"] != "result":
            return None
        error = ErrorKind.BROKER_FULL.error(
            "the job broker (Redis) is full (its maxmemory) and refused this job's records, so "
            "the job was stopped; submit it again later (if this repeats, the operator should "
            "raise Redis's maxmemory: README, Scale out)")
        return run_id, entry("result", empty_result(error))

    def _refused(self, run_id: str) -> None:
        if run_id in self._full:
            return
        self._full.add(run_id)
        cut_stream(self._conn, run_id)
        self._on_full(run_id)
