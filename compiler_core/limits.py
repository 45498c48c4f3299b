"""Limits at the trust boundary: one table of every cap on bytes that cross into the server.

Two kinds of bytes cross into the server's process: what a job writes (records, stdout, stderr,
notes, files) and what a client sends (bodies, queries, headers, uploads). Both are hostile input.
Each cap below is a named setting with a documented default; hitting one turns into a typed error
or a `result["truncated"]` entry that names the setting, never an exception in the server. An
operator raises one with the environment variable `TORCHBOLT_LIMIT_<NAME>` (upper case), read
when the process starts.

Defaults measured on real results (this 2-core machine, torch 2.13): a 2-layer
TransformerEncoder fw+bw job writes 37 records, 1.5 MB in all (the largest 143 KB); the 32-layer
one's result is 21.4 MB of JSON, 1.35 MB compressed (`bench/results/model_size.json`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

MiB = 1 << 20


@dataclass(frozen=True)
class Limit:
    name: str
    default: int | float
    unit: str
    help: str

    @property
    def value(self) -> int | float:
        raw = os.environ.get(f"TORCHBOLT_LIMIT_{self.name.upper()}")
        if raw is None:
            return self.default
        try:
            value = type(self.default)(raw)
        except ValueError:
            return self.default
        return value if value > 0 else self.default


TABLE = (
    Limit("record_bytes", 16 * MiB, "bytes",
          "one record line a job writes; a longer line is dropped, and the result says so"),
    Limit("records_per_job", 20_000, "records",
          "records kept per job; past it the job is stopped with a RecordLimit error"),
    Limit("record_bytes_per_job", 64 * MiB, "bytes",
          "all of a job's records together; past it the job is stopped (RecordLimit)"),
    Limit("stream_bytes_per_run", 32 * MiB, "bytes",
          "a run's records on the fleet's Redis stream, compressed; past it the job is stopped "
          "(RecordLimit)"),
    Limit("stage_text_chars", 4_000_000, "characters",
          "one stage's text; longer text is cut, with a visible mark"),
    Limit("notes_per_job", 50, "notes", "notes (one-line messages) kept per result"),
    Limit("note_chars", 2_000, "characters", "one note's text"),
    Limit("result_bytes", 64 * MiB, "bytes",
          "a stored result as JSON; past it the largest stage texts are dropped"),
    Limit("result_compressed_bytes", 16 * MiB, "bytes",
          "a stored result compressed (what one job may add to the share store)"),
    Limit("graph_nodes_laid_out", 5_000, "nodes",
          "items of one graph view the server lays out; more is a 413"),
    Limit("layout_seconds", 5.0, "seconds",
          "Graphviz dot per graph view; past it the fast layered layout is used"),
    Limit("trace_upload_bytes", 64 * MiB, "bytes", "one TORCH_TRACE upload, all files together"),
    Limit("parse_seconds", 20.0, "seconds",
          "reading one TORCH_TRACE upload into a result (in a helper process of its own)"),
    Limit("build_seconds", 60.0, "seconds",
          "a server's build of one job's result from its records, in a process of its own (CPU "
          "and wall-clock); past it the result has no stages and says so"),
    Limit("build_memory", 3 << 30, "bytes",
          "that build process's address space; past it the same"),
    # What one client (a peer address) may cost the web server, however it asks.
    Limit("connections_per_client", 16, "connections",
          "a client's open connections; another is answered 429 and closed"),
    Limit("stalled_send_seconds", 30.0, "seconds",
          "an answer whose reader took none of it for this long is dropped, its connection closed"),
    Limit("buffered_bytes_per_client", 32 * MiB, "bytes",
          "answers a client has not read yet, held by the server; past it its slowest is dropped"),
    Limit("plain_answer_bytes", 4 * MiB, "bytes",
          "a whole stored result sent without gzip; a larger one is a 406 (ask with gzip)"),
    Limit("layout_seconds_per_client", 20.0, "seconds",
          "graph layouts a client may spend at once, refilled at this much a minute; then 429"),
    Limit("upload_store_bytes", 8 * MiB, "bytes",
          "share-store bytes a client's uploads may add at once, refilled at this much an hour"),
    Limit("queued_per_network", 16, "jobs",
          "queued jobs of one /24 (IPv4) or /64 (IPv6) past which its clients queue only a first"),
    Limit("queue_kept_for_new", 16, "jobs",
          "the job queue's last places, kept for clients with nothing queued"),
    Limit("fleet_store_bytes", 1024 * MiB, "bytes",
          "the fleet's shared results store in Redis; past it the least recently used results "
          "go, never one used within the hour (else a new result is not stored)"),
)
LIMITS = {limit.name: limit for limit in TABLE}


def limit(name: str) -> int | float:
    """The value of one named limit (its default unless the environment overrides it)."""
    return LIMITS[name].value


def catalogue() -> list[dict]:
    """Every limit with its current value, for GET /api/catalogue and the README's table."""
    return [{"name": x.name, "value": x.value, "default": x.default, "unit": x.unit,
             "help": x.help} for x in TABLE]
