"""Round-robin between clients, per environment: where runs wait before they go into RQ.

RQ's queue is FIFO, so one client's burst would delay everyone queued after it. A run therefore
waits here, and goes into its environment's RQ queue only when a slot of that environment is
free (as app/fairqueue.py serves one web server's runner threads):

    torchbolt:fair:ENV          a hash: `round` (the round of the run sent last), `seq` (runs
                                queued so far), `client:C` (the round of C's latest run),
                                `run:R` (R's member in `waiting`)
    torchbolt:fair:ENV:waiting  runs waiting: score = their round, member = "SEQ:RUN"
    torchbolt:fair:ENV:sent     runs sent to RQ and not ended: score = deadline (Redis's clock)

Each client's runs take one round each: a new run gets the current round, or the round after
its client's latest run when that is later. The lowest round goes first and, within a round,
the run queued first (members sort as text, SEQ is zero-padded). So while A's burst waits, B's
and C's single runs go before A's second; a client's backlog delays each other client by at most
one run per round.

Crash-safe by construction: queueing and taking out are Lua scripts; the hand-over is one
WATCH/MULTI transaction that moves the run to `sent` and enqueues it into RQ together. No
process owns a queue: any web server or slot may `dispatch` (every slot does on each heartbeat),
and a sent run frees its place once its stream holds a `result` (from its slot, the reaper or a
cancel), its stream is gone, or its deadline (RQ's own time limit) has passed.
"""

from __future__ import annotations

from . import protocol
from .reaper import enqueue, job_timeout, live_slots

# KEYS: state, waiting; ARGV: run id, client, seconds to keep. Returns the run's rank (0: next).
PUSH = """
local current = tonumber(redis.call('HGET', KEYS[1], 'round') or 0)
local latest = redis.call('HGET', KEYS[1], 'client:' .. ARGV[2])
local round = current
if latest then round = math.max(current, tonumber(latest) + 1) end
local member = string.format('%012d:%s', redis.call('HINCRBY', KEYS[1], 'seq', 1), ARGV[1])
redis.call('HSET', KEYS[1], 'client:' .. ARGV[2], round, 'run:' .. ARGV[1], member)
redis.call('ZADD', KEYS[2], round, member)
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[3])
return redis.call('ZRANK', KEYS[2], member)
"""
# KEYS: state, waiting; ARGV: run id. 1 when the run was waiting (it no longer is), else 0.
REMOVE = """
local member = redis.call('HGET', KEYS[1], 'run:' .. ARGV[1])
if not member then return 0 end
redis.call('HDEL', KEYS[1], 'run:' .. ARGV[1])
return redis.call('ZREM', KEYS[2], member)
"""


def _keys(env_id: str) -> list[str]:
    return [protocol.fair_key(env_id), protocol.fair_key(env_id, "waiting")]


def push(conn, env_id: str, run_id: str, client: str) -> int:
    """Queue a run (its stream's first entry says what to run); returns how many runs of this
    environment wait ahead of it now."""
    script = conn.register_script(PUSH)
    return script(keys=_keys(env_id), args=[run_id, client, protocol.RUN_TTL_S])


def remove(conn, env_id: str, run_id: str) -> bool:
    """Take a run out before it went into RQ (a cancel); False when it already went."""
    return bool(conn.register_script(REMOVE)(keys=_keys(env_id), args=[run_id]))


def dispatch(conn, env_id: str) -> int:
    """Send waiting runs into RQ while this environment has free slots; returns how many left
    the queue (a run whose stream expired leaves it without being sent)."""
    sent = 0
    while _send_next(conn, env_id):
        sent += 1
    return sent


def _send_next(conn, env_id: str) -> bool:
    """Hand the next waiting run over to RQ if a slot is free; False when there was none to
    send or no free slot. Retried when another process changed the queue meanwhile."""
    from redis.exceptions import WatchError
    state, waiting = _keys(env_id)
    sent = protocol.fair_key(env_id, "sent")
    with conn.pipeline() as pipe:
        while True:
            try:
                pipe.watch(waiting, sent)
                head = pipe.zrange(waiting, 0, 0, withscores=True)
                if not head:
                    return False
                now = _now(pipe)
                ended = _ended(pipe, sent, now)
                if pipe.zcard(sent) - len(ended) >= live_slots(conn, env_id):
                    return False
                (member, round_), = head
                run_id = member.decode().split(":", 1)[1]
                origin = protocol.run_origin(pipe, run_id)
                pipe.multi()
                if ended:
                    pipe.zrem(sent, *ended)
                pipe.zrem(waiting, member)
                pipe.hdel(state, f"run:{run_id}")
                pipe.hset(state, "round", int(round_))
                if origin is not None:  # else its stream is gone (expired): nothing to run
                    pipe.zadd(sent, {run_id: now + job_timeout(origin["options"])})
                    pipe.expire(sent, protocol.RUN_TTL_S)
                    enqueue(conn, env_id, run_id, origin["key"], origin["source"],
                            origin["options"], 1, pipeline=pipe)
                pipe.execute()
                return True
            except WatchError:
                continue


def _ended(pipe, sent: str, now: float) -> list[bytes]:
    """Sent runs that no longer hold a slot: their stream ends with a result or is gone, or
    their deadline has passed."""
    ended = []
    for run_id, deadline in pipe.zrange(sent, 0, -1, withscores=True):
        last = pipe.xrevrange(protocol.run_key(run_id.decode()), count=1)
        if deadline < now or not last or protocol.entry_kind(last[0][1]) == "result":
            ended.append(run_id)
    return ended


def _now(conn) -> float:
    """Redis's clock, the same for every web server and slot."""
    seconds, micro = conn.time()
    return seconds + micro / 1e6
