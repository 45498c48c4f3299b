"""The share store: finished results in SQLite, under the content hash of what produced them.

A key is the hash of (source, options, engine version), so an identical submit finds its result
and `/r/KEY` reloads code and result without a recompile. Rows live in `DATA_DIR/results.sqlite3`
and survive restarts. Results are stored zlib-compressed JSON (generated code compresses ~10x), each within the
stored-result limits (`compress_result`: its largest texts dropped first).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator

from compiler_core import compress_result

KEY_CHARS = 20  # hex digits of sha256 kept in share links: 80 bits

SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    options TEXT NOT NULL,
    result BLOB NOT NULL,
    created REAL NOT NULL
)
"""


def content_key(source: str, options: dict, engine: str) -> str:
    canonical = json.dumps({"source": source, "options": options, "engine": engine},
                           sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:KEY_CHARS]


def is_key(text: str) -> bool:
    return len(text) == KEY_CHARS and all(c in "0123456789abcdef" for c in text)


class Store:
    """One SQLite file; a connection per call keeps it safe across server threads."""

    def __init__(self, data_dir: str):
        os.makedirs(data_dir, exist_ok=True)
        self.path = os.path.join(data_dir, "results.sqlite3")
        with self._db() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(SCHEMA)

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=10)
        try:
            with db:  # commits, or rolls back on an exception
                yield db
        finally:
            db.close()

    def put(self, key: str, source: str, options: dict, result: dict) -> None:
        blob = compress_result(result)  # within the stored-result limits
        with self._db() as db:
            db.execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?)",
                       (key, source, json.dumps(options), blob, time.time()))

    def row(self, key: str) -> tuple[str, dict, bytes] | None:
        """(source, options, compressed result JSON) or None; `results.CachedStore` reads it."""
        with self._db() as db:
            row = db.execute("SELECT source, options, result FROM results WHERE key = ?",
                             (key,)).fetchone()
        return None if row is None else (row[0], json.loads(row[1]), row[2])
