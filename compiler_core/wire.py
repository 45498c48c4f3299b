"""The record stream: what the worker child writes, one JSON object per line, as it happens.

A record is `{"name", "compile_id", "t", "meta", "payload"}`. Names are PyTorch's own structured
trace event/artifact names (`dynamo_output_graph`, `inductor_output_code` ...) or torchbolt's
(`bytecode`, `fx_nodes`, `core_aten`, `prims`, `ir_pre_fusion`, `error`, `run_end` ...). The result
is a pure function of the record list (`compiler_core.report.result.build_result`), so a crashed job
still yields every stage captured before the crash.
"""

from __future__ import annotations

import json
import math
import threading
import time
from typing import IO

from .limits import limit

READ_CHUNK = 1 << 20
PACKED_META = "meta_json"  # a kept record's meta as its JSON text (`packed`)
READ_PER_CALL = 16 << 20  # a flood is read over several of the supervisor's polls


class RecordWriter:
    """Appends records to a line-buffered file; safe to call from any thread."""

    def __init__(self, stream: IO[str]):
        self._stream = stream
        self._lock = threading.Lock()
        self._start = time.monotonic()

    def emit(self, name: str, compile_id: str | None = None, payload: str | None = None, /,
             **meta) -> None:
        record = {"name": name, "compile_id": compile_id,
                  "t": round(time.monotonic() - self._start, 4), "meta": meta, "payload": payload}
        line = json.dumps(record, default=str)
        with self._lock:
            self._stream.write(line + "\n")
            self._stream.flush()


def read_records(path: str) -> list[dict]:
    """All complete records in a file (a torn last line from a killed writer is skipped)."""
    tail, records = RecordTail(path), []
    while batch := tail.new_records():
        records += batch
    return records


class RecordTail:
    """Reads the records appended to a file since the last call (for live streaming).

    The file is written by the job, so it is hostile input: it is read in chunks, at most
    `READ_PER_CALL` bytes per call; an unfinished line is kept only up to the `record_bytes`
    limit, and a longer line is dropped as it streams by (counted in `dropped`), so a record
    with no newline costs neither memory nor re-reading. Dropped lines count against
    `records_per_job` too: past it, `over_limit` names that limit and nothing more is read (256
    MB of one-byte lines would otherwise cost the server minutes of parsing)."""

    def __init__(self, path: str):
        self.path = path
        self.dropped = {"oversized": 0, "malformed": 0}
        self._offset = 0
        self._line = bytearray()
        self._skipping = False  # inside a line longer than the limit: drop up to its newline
        self._cap = limit("record_bytes")
        self.over_limit: str | None = None

    def new_records(self) -> list[dict]:
        records: list[dict] = []
        if sum(self.dropped.values()) > limit("records_per_job"):
            self.over_limit = "records_per_job"
            return records
        try:
            fh = open(self.path, "rb")
        except FileNotFoundError:
            return records
        with fh:
            fh.seek(self._offset)
            for _ in range(READ_PER_CALL // READ_CHUNK):
                chunk = fh.read(READ_CHUNK)
                if not chunk:
                    break
                self._offset += len(chunk)
                self._feed(chunk, records)
        return records

    def _feed(self, chunk: bytes, records: list[dict]) -> None:
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            piece = chunk[start:newline if newline >= 0 else len(chunk)]
            if not self._skipping and len(self._line) + len(piece) > self._cap:
                self._skipping, self._line = True, bytearray()
                self.dropped["oversized"] += 1
            if not self._skipping:
                self._line += piece
            if newline < 0:
                return
            if not self._skipping and self._line.strip():
                record = parse_record(bytes(self._line))
                if record is None:
                    self.dropped["malformed"] += 1
                else:
                    records.append(record)
            self._line, self._skipping = bytearray(), False
            start = newline + 1


def parse_record(line: bytes | str) -> dict | None:
    """A record, or None for a line that isn't one (the job's own code can write to the file)."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: JSON nested thousands deep
        return None
    return valid_record(record)


def packed(record: dict, meta_json: str) -> dict:
    """The record with its meta kept as JSON text: a parsed meta of many small values takes
    ~10x its JSON (a list of short strings: an object each), and a server that held them for a
    job's lifetime kept their memory fragmented after."""
    return {**record, "meta": None, PACKED_META: meta_json}


def unpacked(record: dict) -> dict:
    """A record as `read_records` gives it, whether or not it was `packed`."""
    meta_json = record.get(PACKED_META)
    if meta_json is None:
        return record
    out = {k: v for k, v in record.items() if k != PACKED_META}
    out["meta"] = json.loads(meta_json)
    return out


def valid_record(record) -> dict | None:
    """The record's five fields when each has its type (`meta` an object, `payload` text or
    null, `compile_id` a short string or null), else None. Extra fields are dropped."""
    if not isinstance(record, dict):
        return None
    name, compile_id = record.get("name"), record.get("compile_id")
    meta, payload, t = record.get("meta", {}), record.get("payload"), record.get("t", 0.0)
    if not (isinstance(name, str) and 0 < len(name) <= 100) or not isinstance(meta, dict):
        return None
    if compile_id is not None and not (isinstance(compile_id, str) and 0 < len(compile_id) <= 64):
        return None
    if payload is not None and not isinstance(payload, str):
        return None
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
        t = 0.0
    return {"name": name, "compile_id": compile_id, "t": t, "meta": meta, "payload": payload}
