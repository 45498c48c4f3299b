"""The record stream: what the worker child writes, one JSON object per line, as it happens.

A record is `{"name", "compile_id", "t", "meta", "payload"}`. Names are PyTorch's own structured
trace event/artifact names (`dynamo_output_graph`, `inductor_output_code` ...) or torchbolt's
(`bytecode`, `fx_nodes`, `core_aten`, `prims`, `ir_pre_fusion`, `error`, `run_end` ...). The result
is a pure function of the record list (`compiler_core.report.result.build_result`), so a crashed job
still yields every stage captured before the crash.
"""

from __future__ import annotations

import json
import threading
import time
from typing import IO


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
    return RecordTail(path).new_records()


class RecordTail:
    """Reads records appended to a file since the last call (for live streaming)."""

    def __init__(self, path: str):
        self.path = path
        self._offset = 0

    def new_records(self) -> list[dict]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._offset)
                chunk = fh.read()
        except FileNotFoundError:
            return []
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        return [record for line in complete.decode("utf-8", errors="replace").splitlines()
                if (record := _parse(line)) is not None]


def _parse(line: str) -> dict | None:
    """A record, or None for a line that isn't one (the job's own code can write to the file)."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) and isinstance(record.get("name"), str) else None
