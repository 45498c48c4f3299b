"""The fleet's shared results store in Redis, bounded at `fleet_store_bytes`:

    torchbolt:result:KEY     a result: a hash of source, options, result (zlib JSON), created
    torchbolt:results:used   when each KEY was last used: stored, read, or handed to a job handle
    torchbolt:results:bytes  what each KEY's row takes (source, options, compressed result), and
                             under `*` the total

Storing a result that would take the store past its bound first evicts the least recently used
results, but never one used within `IN_USE_S` (the hour a job handle lives, and a margin): a
handle holds only its key and reads its result from here. When the recent results alone leave
no room, nothing is evicted and the new result is refused (`save` returns False): its job still
answers it from the web server that followed the run. One Lua script decides and evicts, so
web servers storing at once never pass the bound. Results stored before the bound existed are
neither counted nor evicted.
"""

from __future__ import annotations

import json
import time

from ..limits import limit
from . import protocol

IN_USE_S = protocol.HANDLE_TTL_S + 600
EVICT_AT_ONCE = 1000  # results one store may evict (else it is refused)
USED, SIZES = "torchbolt:results:used", "torchbolt:results:bytes"

# KEYS: the result's hash, USED, SIZES. ARGV: key, source, options, blob, its size, now, the
# bound, in use since (a result used since then stays), the result keys' prefix.
SAVE = """
local key, size, now = ARGV[1], tonumber(ARGV[5]), ARGV[6]
local bound, since = tonumber(ARGV[7]), ARGV[8]
local total = tonumber(redis.call('HGET', KEYS[3], '*') or '0')
total = total - tonumber(redis.call('HGET', KEYS[3], key) or '0')
local victims, freed = {}, 0
if total + size > bound then
  local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. since, 'LIMIT', 0, ARGV[10])
  for _, other in ipairs(old) do
    if total - freed + size <= bound then break end
    if other ~= key then
      victims[#victims + 1] = other
      freed = freed + tonumber(redis.call('HGET', KEYS[3], other) or '0')
    end
  end
  if total - freed + size > bound then return -1 end
end
for _, other in ipairs(victims) do
  redis.call('DEL', ARGV[9] .. other)
  redis.call('ZREM', KEYS[2], other)
  redis.call('HDEL', KEYS[3], other)
end
redis.call('HSET', KEYS[1], 'source', ARGV[2], 'options', ARGV[3], 'result', ARGV[4],
           'created', now)
redis.call('ZADD', KEYS[2], now, key)
redis.call('HSET', KEYS[3], key, size, '*', total - freed + size)
return #victims
"""


def save(conn, key: str, source: str, options: dict, blob: bytes) -> bool:
    """Store a row, evicting the least recently used rows not in use if needed; False when
    the rows in use leave it no room (nothing was changed)."""
    options_json = json.dumps(options)
    size = len(source.encode()) + len(options_json.encode()) + len(blob)
    now = time.time()
    evicted = conn.register_script(SAVE)(
        keys=[protocol.result_key(key), USED, SIZES],
        args=[key, source, options_json, blob, size, repr(now), limit("fleet_store_bytes"),
              repr(now - IN_USE_S), protocol.result_key(""), EVICT_AT_ONCE])
    return evicted >= 0


def load(conn, key: str) -> tuple[str, dict, bytes] | None:
    """(source, options, compressed result) or None; the row counts as used now."""
    with conn.pipeline(transaction=False) as pipe:
        pipe.hmget(protocol.result_key(key), "source", "options", "result")
        pipe.zadd(USED, {key: time.time()}, xx=True)
        row, _ = pipe.execute()
    if row[2] is None:
        return None
    return row[0].decode(), json.loads(row[1]), row[2]


def touch(conn, key: str) -> None:
    """A job handle was made for `key`: its row, if stored, counts as used now."""
    conn.zadd(USED, {key: time.time()}, xx=True)
