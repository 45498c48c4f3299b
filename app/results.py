"""Stored results as the server reads them: each expanded once and shared, never per request.

`CachedStore` wraps a share store (`store.Store`, or the broker's `RedisStore`), both of which
give a key's row as (source, options, compressed result JSON):

- `get(key)`: the row with its result expanded; the expanded results are kept in a cache bounded
  by their JSON's size (a stage read, a cached submit and a graph layout of one key share one
  copy). The dict is shared: callers only read it.
- `answer(key)`: the whole `GET /api/results/KEY` answer, gzipped, built from the stored JSON
  without parsing it and kept in a second bounded cache: eight clients reading a 30 MB result
  cost one build, not eight parses and eight serializations.

Each is built once at a time per key (single flight): concurrent misses wait for the first.
`put` replaces the row and drops what was cached of the key.
"""

from __future__ import annotations

import gzip
import json
import threading

from compiler_core import result_json

from .http import BodyCache

EXPANDED_WEIGHT = 2  # a parsed result takes up to twice its JSON's bytes (tracemalloc: 1.0x, 1.9x)


class CachedStore:
    def __init__(self, store, max_bytes: int):
        self.store = store
        self._results = BodyCache(max_bytes // 2)
        self._answers = BodyCache(max_bytes // 2)
        self._flights: dict[tuple, threading.Lock] = {}
        self._lock = threading.Lock()

    def put(self, key: str, source: str, options: dict, result: dict) -> None:
        self.store.put(key, source, options, result)
        self.forget(key)

    def stored_bytes(self, key: str) -> int:
        """What the key's row takes in the store (its compressed result), 0 without one."""
        row = self.store.row(key)
        return len(row[2]) if row else 0

    def forget(self, key: str) -> None:
        self._results.pop(key)
        self._answers.pop(key)

    def get(self, key: str) -> dict | None:
        """`{"key", "source", "options", "result"}` or None."""
        return self._once(key, self._results, self._expanded)

    def answer(self, key: str) -> bytes | None:
        """The gzipped JSON of `{"ok", "key", "source", "options", "result"}`, or None."""
        return self._once(key, self._answers, self._answer)

    def _expanded(self, key: str) -> tuple[dict, int] | None:
        row = self.store.row(key)
        if row is None:
            return None
        source, options, blob = row
        data = result_json(blob)
        entry = {"key": key, "source": source, "options": options, "result": json.loads(data)}
        return entry, EXPANDED_WEIGHT * (len(data) + len(source))

    def _answer(self, key: str) -> tuple[bytes, int] | None:
        row = self.store.row(key)
        if row is None:
            return None
        source, options, blob = row
        head = {"ok": True, "key": key, "source": source, "options": options}
        body = gzip.compress(json.dumps(head).encode()[:-1] + b', "result": '
                             + result_json(blob) + b"}", compresslevel=6)
        return body, len(body)

    def _once(self, key: str, cache: BodyCache, build):
        value = cache.get(key)
        if value is not None:
            return value
        with self._lock:
            flight = self._flights.setdefault((id(cache), key), threading.Lock())
        with flight:
            value = cache.get(key)
            if value is None:
                built = build(key)
                if built is None:
                    return None
                value, size = built
                cache.put(key, value, size)
        with self._lock:
            self._flights.pop((id(cache), key), None)
        return value
