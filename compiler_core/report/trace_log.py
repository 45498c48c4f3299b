"""PyTorch's structured trace as torchbolt records: in process and from `TORCH_TRACE` log files.

Every structured-trace entry is a metadata dict (one key naming the event, plus `frame_id`,
`frame_compile_id`, `attempt` ...) and an optional text payload. In process, `trace_log`'s
handler receives them as `record.metadata` and `record.payload` (runtime/capture.py); a
`TORCH_TRACE=DIR` run writes the same entries to `DIR/dedicated_log_torch_trace_*.log`
(`TorchLogsFormatter(trace=True)`, torch 2.11-2.13), one glog-prefixed JSON line each, with the
payload's lines after it, each prefixed by a tab (the format tlparse reads). `TraceConverter` turns
an entry into a record for both, so a log file yields the same stages as a live run of the same
script, except those only torchbolt's own hooks capture (bytecode, node tables, the Core ATen and
prims views, loop IR, timings).

Log files are untrusted input (the page uploads them): they are only split into lines and
parsed as JSON, and a line that isn't an entry is counted and skipped, never fatal. A log's
entries that no stage or list of the result reads are counted by name (`trace_unread`, and a
note), so that what tlparse shows of a log is either shown by torchbolt or named as not read
(tests/test_trace_import_tlparse.py holds the reader to tlparse on tlparse's own test logs).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Iterable, Iterator

from ..features import TRACE_ARTIFACTS, TRACE_EVENTS
from ..features.precompile import LoggedPrecompiles
from ..wire import valid_record
from .ranks import joined, rank_id
from .result import build_result

# Structured-trace names we keep are those the features declare (`spec.traced`); everything else
# (chromium events, tensor descriptions) is noise in process, and is named in a log's result as
# not read (`TraceLog.unread`).
# Artifacts older torch wrote under another name: the post-grad graph was `after_post_grad_graph`
# (with `before_post_grad_graph`, the graph before the passes) until Inductor renamed it; a log
# holds one or the other per compile (tlparse's test logs of both ages).
RENAMED_ARTIFACTS = {"after_post_grad_graph": "inductor_post_grad_graph"}
# Read from log files only: in process, exports come from torchbolt's own hook
# (runtime/programs.py) and the guards from `dynamo_cpp_guards_str`, which torch writes beside
# this list of the guards' code (2.13, 2.14 do); guards.py reads the list where a log has no other.
LOG_ENTRIES = {"exported_program", "dynamo_guards"}
# Entries that carry their own name, which tlparse names them by (a graph dump's, a link's).
NAMED_ENTRIES = {"artifact", "graph_dump", "link", "dump_file"}
RUN_LEVEL = {"export"}  # records read without a compile id (any other one is in no compile)
# `V1201 00:34:17.201000 20905 site-packages/torch/_dynamo/convert_frame.py:303] {...}`
ENTRY = re.compile(r"^[VIWEC](?P<time>\d{4} \d\d:\d\d:\d\d\.\d{6}) \d+ [^\]]*:\d+\] (?P<json>\{.*)$")
# TORCH_TRACE's file of one rank, as tlparse names ranks: dedicated_log_torch_trace_rank_N[_x].log
RANK_IN_NAME = re.compile(r"dedicated_log_torch_trace_rank_(\d{1,6})(?:_[^/]*)?\.log$")


class TraceConverter:
    """One process's trace entries -> records `(name, compile_id, meta)`; None for noise.

    Stateful: PyTorch sends each filename once (`{"str": [text, id]}`) and refers to it by id."""

    def __init__(self):
        self.interned: dict[int, str] = {}

    def convert(self, metadata: dict) -> tuple[str, str | None, dict] | None:
        if "str" in metadata:
            text, index = metadata["str"]
            self.interned[index] = text
            return None
        name, meta = _classify(metadata)
        if name is None:
            return None
        compile_id = compile_id_of(metadata)
        if name == "dynamo_start":
            meta = {"stack": [{**frame, "filename": self.interned.get(frame.get("filename"),
                                                                       frame.get("filename"))}
                              for frame in meta.get("stack", [])]}
        return name, compile_id, {"attempt": metadata.get("attempt"), **meta}


def compile_id_of(metadata: dict) -> str | None:
    """The compile id as PyTorch writes it (`CompileId.__str__`, the attempt left out):
    `frame_id/frame_compile_id`, and for compiled autograd `!N` (its backward graph), or `!N/`
    before the frame's ids (Dynamo compiling that graph)."""
    frame = (f"{metadata['frame_id']}/{metadata['frame_compile_id']}"
             if metadata.get("frame_id") is not None else None)
    autograd = metadata.get("compiled_autograd_id")
    if autograd is None:
        return frame
    return f"!{autograd}" + (f"/{frame}" if frame else "")


def _classify(metadata: dict) -> tuple[str | None, dict]:
    if "artifact" in metadata:
        name = (metadata["artifact"] or {}).get("name")
        name = RENAMED_ARTIFACTS.get(name, name)
        return (name if name in TRACE_ARTIFACTS else None), {}
    for key in TRACE_EVENTS.intersection(metadata):
        value = metadata[key]
        return key, (value if isinstance(value, dict) else {})
    return None, {}


@dataclass
class TraceLog:
    """One log file read: its records, the torch that wrote it, and what was skipped."""
    name: str
    records: list[dict] = field(default_factory=list)
    torch_version: str | None = None
    rank: int | None = None
    skipped_lines: int = 0
    entries: Counter = field(default_factory=Counter)  # every entry name seen, kept or not
    unread: Counter = field(default_factory=Counter)  # entry name -> how many were not read
    precompiles: LoggedPrecompiles = field(default_factory=LoggedPrecompiles)


CHUNK = 1 << 20  # bytes of a log file decoded and split at once (1 MiB: its text, lines and
# bytes are held together for a moment; 4 MiB held 18 MiB more at the 20.9 MB log's reading
# peak, 16 MiB 35 MiB more than 4, no less CPU)


def file_lines(path: Path) -> Iterator[str]:
    """A log file's lines (split at "\n" only, as tlparse splits them), read 1 MiB at a time:
    a log is never held whole, and a chunk is decoded and split in one go (a call per line
    would cost seconds on a log of millions). UTF-8, undecodable bytes replaced; a chunk ends
    at a newline, so no character is cut in two."""
    with open(path, "rb") as fh:
        pending: list[bytes] = []  # a line longer than a chunk, so far
        while chunk := fh.read(CHUNK):
            end = chunk.rfind(b"\n")
            if end < 0:
                pending.append(chunk)
                continue
            text = b"".join([*pending, chunk[:end]]).decode("utf-8", errors="replace")
            pending = [chunk[end + 1:]]
            yield from text.split("\n")
        if rest := b"".join(pending):
            yield rest.decode("utf-8", errors="replace")


def _entries(lines: Iterable[str]):
    """(time, metadata, payload) of each entry; (None, None, None) for a line that isn't one."""
    head, payload = None, []
    for line in lines:
        if not line:  # never part of an entry (a payload's blank line is a tab): a stutter of
            continue  # the logger, which tlparse skips too (export logs have them mid-payload)
        if line.startswith("\t") and head is not None:
            payload.append(line[1:])
            continue
        if head is not None:
            yield head[0], head[1], "\n".join(payload) if payload else None
        head, payload = None, []
        match = ENTRY.match(line)
        try:
            metadata = json.loads(match["json"]) if match else None
        except (ValueError, RecursionError):  # RecursionError: JSON nested thousands deep
            metadata = None
        if isinstance(metadata, dict):
            head = (match["time"], metadata)
        else:
            yield None, None, None
    if head is not None:
        yield head[0], head[1], "\n".join(payload) if payload else None


def _seconds(stamp: str) -> float:
    """glog's `MMDD HH:MM:SS.micro` as seconds, for offsets within one run (the year is not
    written: a leap year's, so that 0229 parses)."""
    return datetime.strptime(f"2000{stamp}", "%Y%m%d %H:%M:%S.%f").timestamp()


def parse_log(name: str, log_file: str | Path) -> TraceLog:
    """A log file (its text, or its Path to read it from a chunk at a time) as torchbolt records
    (`t` counts from the first entry)."""
    log = TraceLog(name)
    match = RANK_IN_NAME.search(name)
    log.rank = int(match[1]) if match else None
    converter, start = TraceConverter(), None
    texts: dict[str, str] = {}  # each payload once: a recompile that Inductor's caches answer
    # logs the same graphs and code again, which its records then share
    lines = file_lines(log_file) if isinstance(log_file, Path) else log_file.split("\n")
    for stamp, metadata, payload in _entries(lines):
        if metadata is None:
            log.skipped_lines += 1
            continue
        try:
            start = start if start is not None else _seconds(stamp)
            entry, record = _read_entry(log, converter, metadata, payload)
        except (TypeError, ValueError, AttributeError, KeyError, IndexError):
            log.skipped_lines += 1  # an entry of a shape no torch writes
            continue
        record = record and valid_record({**record, "t": round(_seconds(stamp) - start, 4)})
        if record is not None and (record["compile_id"] is not None or record["name"] in RUN_LEVEL):
            if record["payload"]:
                record["payload"] = texts.setdefault(record["payload"], record["payload"])
            log.records.append(record)
        elif entry is not None:
            log.unread[entry + (" (outside any compile)" if record is not None else "")] += 1
    return log


def _read_entry(log: TraceLog, converter: TraceConverter, metadata: dict,
                payload: str | None) -> tuple[str | None, dict | None]:
    """The entry's name and its record; a name with no record is one torchbolt does not read
    (None for the entries read into the log's own fields: interned names, torch version)."""
    kind = next((k for k in metadata if k not in _CONTEXT_KEYS), None)
    if kind is None:
        raise ValueError("an entry with no event in it")
    entry = str(metadata[kind]["name"] if kind in NAMED_ENTRIES else kind)[:100]
    log.entries[entry] += 1
    if entry == "torch_version":
        version = json.loads(payload or "{}").get("pytorch_version")
        log.torch_version = version if isinstance(version, str) else None
        return None, None
    if isinstance(metadata.get("rank"), int) and not RANK_IN_NAME.search(log.name):
        log.rank = metadata["rank"]  # a file named otherwise (tlparse goes by the name)
    if entry == "exported_program":  # the program as PyTorch prints it, as a run's export
        index = sum(r["name"] == "export" for r in log.records)
        return entry, {"name": "export", "compile_id": None, "payload": None,
                       "meta": {"index": index, "line": None, "stages": {entry: payload or ""}}}
    if entry in LOG_ENTRIES:
        return entry, {"name": entry, "compile_id": compile_id_of(metadata), "meta": {},
                       "payload": payload}
    converted = converter.convert(metadata)
    if converted is None:
        return (None if entry == "str" else entry), None
    name, compile_id, meta = converted
    if compile_id is None:  # a precompile's lowering logs none (features/precompile.py)
        compile_id = log.precompiles.compile_id(name, metadata.get("stack"), converter.interned)
    return entry, {"name": name, "compile_id": compile_id, "meta": meta, "payload": payload}


_CONTEXT_KEYS = {"frame_id", "frame_compile_id", "attempt", "has_payload", "rank", "stack",
                 "compiled_autograd_id", "subgraph_name"}


LIBRARY_FILE = re.compile(r"[/\\](site|dist)-packages[/\\]|[/\\]torch[/\\](_|nn[/\\])")


def _script_frame(stack: list) -> str | None:
    """The file of a `dynamo_start` stack's innermost frame outside installed packages and
    torch's own code (a compiled module's frame is torch's `external_utils.inner`, its
    `forward` inlined), else of its innermost frame."""
    files = [f.get("filename") for f in stack if isinstance(f, dict)]
    files = [f for f in files if isinstance(f, str)]
    own = [f for f in files if not LIBRARY_FILE.search(f)]
    return (own or files or [None])[-1]


def user_file_of(records: list[dict]) -> str:
    """The script the log is about: the file of most compiled frames (each `dynamo_start`'s
    innermost frame of the script), so that stages map lines back to it as they do for a
    pasted script."""
    files = Counter(_script_frame(r["meta"]["stack"]) for r in records
                    if r["name"] == "dynamo_start" and isinstance(r["meta"].get("stack"), list))
    found = files.most_common(1)[0][0] if files else ""
    return found if isinstance(found, str) else ""


def trace_result(files: dict[str, str | Path], rank: int | None = None) -> dict:
    """The result of a `TORCH_TRACE` folder's log files ({file name: its text, or its Path to
    read it from as it goes: a log of hundreds of MB is never held whole}).

    A multi-process run (one log per rank, each named by its rank) is one result, each compile's
    id naming its rank (report/ranks.py); `rank` asks for that rank's log alone. Of logs of no
    rank, the first by name is read; the result's notes name the others.

    Ranks are built one by one, as they are read: a rank's records are let go once its result is
    built, but for the lowest rank so far, whose result is built last (its notes name the folder's
    other logs). A rank built early that turns out to be the one read alone is read again."""
    logs: list[TraceLog] = []
    built: dict[str, dict] = {}  # log name -> its result as a later rank's (no folder notes)
    lowest: TraceLog | None = None
    for name, text in sorted(files.items()):
        log = parse_log(name, text)
        if not log.entries:
            continue
        logs.append(log)
        if log.rank is None or (rank is not None and log.rank != rank):
            continue
        if rank is None and (lowest is None or log.rank < lowest.rank):
            lowest, log = log, lowest
        if rank is None and log is not None:
            built[log.name] = log_result(log, [])
            log.records = []
    if not logs:
        raise ValueError("no structured-trace entries found (the files TORCH_TRACE=DIR writes "
                         "are DIR/dedicated_log_torch_trace_*.log)")
    ranked = sorted((log for log in logs if log.rank is not None), key=lambda log: log.rank)
    if rank is not None:
        chosen = [log for log in ranked if log.rank == rank][:1]
        if not chosen:
            raise ValueError(f"no log of rank {rank} among {', '.join(l.name for l in logs)}")
    elif len(ranked) > 1 and len({log.rank for log in ranked}) == len(ranked):
        chosen = ranked
    else:
        chosen = [next((log for log in ranked if log.rank == 0), logs[0])]
    others = [log for log in logs if all(log is not c for c in chosen)]
    first = parse_log(chosen[0].name, files[chosen[0].name]) if chosen[0].name in built \
        else chosen[0]
    if len(chosen) == 1:
        return log_result(first, others)
    ranks = [log.rank for log in chosen]  # the first rank's notes name the ranks and the others
    return joined([(log.rank, log_result(first, others, ranks) if log is chosen[0]
                    else built[log.name]) for log in chosen])


def log_result(log: TraceLog, others: list[TraceLog], ranks: list[int] | None = None) -> dict:
    """The result of one log (`ranks`: of a multi-process run's, the ranks joined), the other
    logs of its folder named in its notes."""
    environment = {"torch": log.torch_version or "unknown", "trace_log": log.name}
    notes = [f"From the TORCH_TRACE log {log.name}"
             + (f" (rank {log.rank})" if log.rank is not None else "")
             + ": the stages PyTorch's structured trace holds. Bytecode, node tables, the Core "
             "ATen and prims views, loop-level IR and timings come only from a run in torchbolt."]
    if ranks:
        notes.append(f"Ranks {', '.join(map(str, ranks))} of a multi-process run, one log each: "
                     f"each compile's id names its rank ({rank_id(log.rank, '0/0')} is rank "
                     f"{log.rank}'s 0/0)")
    notes += [f"Also in the folder: {other.name}" + (f" (rank {other.rank})"
                                                    if other.rank is not None else "")
              for other in others]
    if log.torch_version is None:
        notes.append(f"{log.name} does not say which torch wrote it (no torch_version "
                     "entry: older torch did not write one)")
    if log.skipped_lines:
        notes.append(f"{log.skipped_lines} lines of {log.name} were not trace entries "
                     "and were skipped")
    if log.unread:
        notes.append(f"Entries of {log.name} torchbolt does not read (tlparse shows some of "
                     "them): " + ", ".join(f"{name} ×{count}"
                                           for name, count in log.unread.most_common()))
    records = [{"name": "environment", "compile_id": None, "t": 0, "meta": environment,
                "payload": None}, *log.records,
               *({"name": "note", "compile_id": None, "t": 0, "meta": {"text": note},
                  "payload": None} for note in notes)]
    result = build_result(records, user_file_of(log.records) or log.precompiles.script,
                          {"options": {}})
    result["trace_unread"] = dict(log.unread)
    restarted = [c for c in result["compiles"] if c["restarts"]]
    if restarted:  # the page shows them in each compile's metrics only
        result["notes"].append(
            f"Dynamo restarted its analysis {sum(len(c['restarts']) for c in restarted)} times "
            f"(compilation metrics' restart_reasons), in {', '.join(c['id'] for c in restarted)}"
            + ("; the log has no graph-break entries (older torch recorded a graph break in "
               "an inlined call as a restart only)" if not result["graph_breaks"] else ""))
    return result


def placeholder_source(result: dict, hint: str) -> str:
    """What the editor shows for a log, whose script's source the log does not hold."""
    return (f"# No source: this is the TORCH_TRACE log {result['environment']['trace_log']}\n"
            f"# of {result['user_file'] or 'a script'}. {hint}\n")


def main() -> None:
    """`python -m compiler_core.report.trace_log`: the server reads an upload in a process of
    its own (`compiler_core/supervisor/uploads.py`). stdin: `{"folder", "names": {file: shown
    name}}`; stdout: one line of JSON, `{"environment", "user_file"}` (what the server names the
    log by), then the result's stored form; exit 3 with the reason on stderr when the files hold
    no trace."""
    import sys

    from .stored import compress_result
    request = json.load(sys.stdin)
    files = {shown: Path(request["folder"], file) for file, shown in request["names"].items()}
    try:
        result = trace_result(files)
    except ValueError as exc:
        sys.stderr.write(str(exc)[:2000])
        sys.exit(3)
    head = {"environment": result["environment"], "user_file": result["user_file"]}
    sys.stdout.buffer.write(json.dumps(head).encode() + b"\n" + compress_result(result))


if __name__ == "__main__":
    main()
