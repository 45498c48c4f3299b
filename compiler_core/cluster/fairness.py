"""Round-robin between clients, per environment: where runs wait before they go into RQ.

RQ's queue is FIFO, so one client's burst would delay everyone queued after it. A run therefore
waits here, and goes into its environment's RQ queue only when a slot of that environment is
free. Which run goes next is compiler_core/fairness.py's rule (`round_for`, `order_key`), the
same one that serves one web server's runner threads; this module only keeps its state in Redis:

    torchbolt:fair:ENV          a hash: `round` (the round of the run sent last), `seq` (runs
                                queued so far), `client:C` (the round of C's latest run),
                                `run:R` (R's member in `waiting`), `by:R` (R's client)
    torchbolt:fair:ENV:waiting  runs waiting: score = their round, member = "SEQ:RUN"
    torchbolt:fair:ENV:sent     runs sent to RQ and not ended: score = deadline (Redis's clock)

A sorted set orders by score, then by member as text: with the score `order_key`'s round and the
member starting with its zero-padded SEQ, its order is `order_key`'s.

Admission is that module's rule too (`refusal_among`, from the clients of the waiting runs):
`push` checks it in the transaction that queues, so two web servers cannot both take the last
place, and a refused run raises `QueueRefused` naming the rule.

Crash-safe by construction: each change is one WATCH/MULTI transaction (redis-py retries it when
another process changed the queue meanwhile), and the hand-over moves the run to `sent` and
enqueues it into RQ in the same one. No process owns a queue: any web server or slot may
`dispatch` (every slot does on each heartbeat), and a sent run frees its place once its stream
holds a `result` (from its slot, the reaper or a cancel), its stream is gone, or its deadline
(RQ's own time limit) has passed.
"""

from __future__ import annotations

from ..fairness import QueueRefused, order_key, refusal_among, round_for
from . import protocol
from .reaper import enqueue, job_timeout, live_slots


def _keys(env_id: str) -> list[str]:
    return [protocol.fair_key(env_id), protocol.fair_key(env_id, "waiting")]


def push(conn, env_id: str, run_id: str, client: str, max_queued: int) -> int:
    """Queue a run (its stream's first entry says what to run); returns how many runs of this
    environment wait ahead of it now. `QueueRefused` when admission refuses it (at most
    `max_queued` wait)."""
    state, waiting = _keys(env_id)
    client_field = f"client:{client}"

    def queue(pipe) -> None:
        queued_by = [v.decode() for k, v in pipe.hgetall(state).items() if k.startswith(b"by:")]
        refusal = refusal_among(queued_by, client, max_queued)
        if refusal:
            raise QueueRefused(*refusal)
        current, latest, seq = pipe.hmget(state, "round", client_field, "seq")
        round_ = round_for(int(current or 0), None if latest is None else int(latest))
        seq = int(seq or 0) + 1
        score, tie = order_key(round_, seq)
        member = f"{tie:012d}:{run_id}"
        pipe.multi()
        pipe.hset(state, mapping={"seq": seq, client_field: round_, f"run:{run_id}": member,
                                  f"by:{run_id}": client})
        pipe.zadd(waiting, {member: score})
        pipe.expire(state, protocol.RUN_TTL_S)
        pipe.expire(waiting, protocol.RUN_TTL_S)
        pipe.zrank(waiting, member)

    return conn.transaction(queue, state, waiting)[-1]


def remove(conn, env_id: str, run_id: str) -> bool:
    """Take a run out before it went into RQ (a cancel); False when it already went."""
    state, waiting = _keys(env_id)
    run_field = f"run:{run_id}"

    def take_out(pipe) -> bool:
        member = pipe.hget(state, run_field)
        pipe.multi()
        if member is not None:
            pipe.hdel(state, run_field, f"by:{run_id}")
            pipe.zrem(waiting, member)
        return member is not None

    return conn.transaction(take_out, state, waiting, value_from_callable=True)


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
                pipe.hdel(state, f"run:{run_id}", f"by:{run_id}")
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
