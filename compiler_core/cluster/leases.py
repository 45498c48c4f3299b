"""Per-client limits shared by every web server: a client's live submits, held as leases in Redis.

    torchbolt:leases:CLIENT   a sorted set: one member per queued or running submit (its job
                              id), scored with the time its lease runs out (Redis's clock)

`acquire` drops run-out leases, counts and adds in one Lua script, so two web servers can never
both admit a client's third job. The web servers that serve a submit renew its lease every few
seconds while it is queued or running and release it when it ends or is cancelled; a lease that
is no longer renewed (its web server died mid-job) runs out after `LEASE_S`, and the client has
its place back.
"""

from __future__ import annotations

from . import protocol

LEASE_S = 30  # ten renewals (every 3 s, app/broker.py) may fail before a live submit's lapses

NOW = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1e6
"""  # Redis's clock, the same for every web server
# KEYS[1]: a client's leases; ARGV: lease id, limit, lease seconds. 1: admitted, 0: at the limit.
ACQUIRE = NOW + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
"""
# KEYS[1]: a client's leases; ARGV: lease seconds, lease ids. Extends those still held (XX:
# a lease released meanwhile is not brought back).
RENEW = NOW + """
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i]) end
redis.call('EXPIRE', KEYS[1], ARGV[1])
"""


def acquire(conn, client: str, lease_id: str, limit: int, lease_s: int = LEASE_S) -> bool:
    """Admit one more live submit of `client` unless it has `limit` already."""
    script = conn.register_script(ACQUIRE)
    return bool(script(keys=[protocol.lease_key(client)], args=[lease_id, limit, lease_s]))


def renew(conn, leases: list[tuple[str, str]]) -> None:
    """Extend these (client, lease id) leases by `LEASE_S`."""
    by_client: dict[str, list[str]] = {}
    for client, lease_id in leases:
        by_client.setdefault(client, []).append(lease_id)
    script = conn.register_script(RENEW)
    with conn.pipeline(transaction=False) as pipe:
        for client, ids in by_client.items():
            script(keys=[protocol.lease_key(client)], args=[LEASE_S, *ids], client=pipe)
        pipe.execute()


def release(conn, leases: list[tuple[str, str]]) -> None:
    """End these (client, lease id) leases: their submits finished or were cancelled."""
    with conn.pipeline(transaction=False) as pipe:
        for client, lease_id in leases:
            pipe.zrem(protocol.lease_key(client), lease_id)
        pipe.execute()

