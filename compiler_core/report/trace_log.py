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
parsed as JSON, and a line that isn't an entry is counted and skipped, never fatal.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from ..wire import valid_record
from .result import build_result

# Structured-trace names we keep; everything else (chromium events, tensor descriptions) is noise.
TRACE_EVENTS = {
    "dynamo_start", "dynamo_output_graph", "dynamo_cpp_guards_str", "aot_joint_graph",
    "aot_forward_graph", "aot_backward_graph", "aot_inference_graph", "inductor_output_code",
    "compilation_metrics", "bwd_compilation_metrics",
}
TRACE_ARTIFACTS = {
    "dynamo_graph_break_reason", "recompile_reasons", "inductor_post_grad_graph",
    "inductor_provenance_tracking_node_mappings", "inductor_provenance_tracking_kernel_stack_traces",
    "triton_kernel_info",
}
# `V1201 00:34:17.201000 20905 site-packages/torch/_dynamo/convert_frame.py:303] {...}`
ENTRY = re.compile(r"^[VIWEC](?P<time>\d{4} \d\d:\d\d:\d\d\.\d{6}) \d+ [^\]]*:\d+\] (?P<json>\{.*)$")
RANK_IN_NAME = re.compile(r"rank_(\d{1,6})_")


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
        compile_id = None
        if metadata.get("frame_id") is not None:
            compile_id = f"{metadata['frame_id']}/{metadata['frame_compile_id']}"
        if name == "dynamo_start":
            meta = {"stack": [{**frame, "filename": self.interned.get(frame.get("filename"),
                                                                       frame.get("filename"))}
                              for frame in meta.get("stack", [])]}
        return name, compile_id, {"attempt": metadata.get("attempt"), **meta}


def _classify(metadata: dict) -> tuple[str | None, dict]:
    if "artifact" in metadata:
        name = (metadata["artifact"] or {}).get("name")
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


def _entries(text: str):
    """(time, metadata, payload) of each entry; (None, None, None) for a line that isn't one."""
    head, payload = None, []
    for line in text.split("\n"):
        if line.startswith("\t") and head is not None:
            payload.append(line[1:])
            continue
        if head is not None:
            yield head[0], head[1], "\n".join(payload) if payload else None
        head, payload = None, []
        if not line:
            continue
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


def parse_log(name: str, text: str) -> TraceLog:
    """A log file's text as torchbolt records (`t` counts from the first entry)."""
    log = TraceLog(name)
    match = RANK_IN_NAME.search(name)
    log.rank = int(match[1]) if match else None
    converter, start = TraceConverter(), None
    for stamp, metadata, payload in _entries(text):
        if metadata is None:
            log.skipped_lines += 1
            continue
        try:
            start = start if start is not None else _seconds(stamp)
            record = _read_entry(log, converter, metadata, payload)
        except (TypeError, ValueError, AttributeError, KeyError, IndexError):
            log.skipped_lines += 1  # an entry of a shape no torch writes
            continue
        record = record and valid_record({**record, "t": round(_seconds(stamp) - start, 4)})
        if record is not None:
            log.records.append(record)
    return log


def _read_entry(log: TraceLog, converter: TraceConverter, metadata: dict,
                payload: str | None) -> dict | None:
    kind = next((k for k in metadata if k not in _CONTEXT_KEYS), None)
    if kind is None:
        raise ValueError("an entry with no event in it")
    artifact = metadata["artifact"]["name"] if kind == "artifact" else None
    log.entries[artifact or kind] += 1
    if artifact == "torch_version":
        log.torch_version = json.loads(payload or "{}").get("pytorch_version")
    if isinstance(metadata.get("rank"), int):
        log.rank = metadata["rank"]
    converted = converter.convert(metadata)
    if converted is None:
        return None
    name, compile_id, meta = converted
    return {"name": name, "compile_id": compile_id, "meta": meta, "payload": payload}


_CONTEXT_KEYS = {"frame_id", "frame_compile_id", "attempt", "has_payload", "rank", "stack",
                 "compiled_autograd_id", "subgraph_name"}


def user_file_of(records: list[dict]) -> str:
    """The script the log is about: the file of most compiled frames (innermost frame of each
    `dynamo_start`), so that stages map lines back to it as they do for a pasted script."""
    files = Counter(r["meta"]["stack"][-1].get("filename") for r in records
                    if r["name"] == "dynamo_start" and isinstance(r["meta"].get("stack"), list)
                    and r["meta"]["stack"] and isinstance(r["meta"]["stack"][-1], dict))
    found = files.most_common(1)[0][0] if files else ""
    return found if isinstance(found, str) else ""


def trace_result(files: dict[str, str], rank: int | None = None) -> dict:
    """The result of a `TORCH_TRACE` folder's log files ({file name: text}).

    A multi-process run (one log per rank) is shown one process at a time: rank 0 (or the one
    asked for, else the first log by name); the result's notes name the others."""
    logs = [log for log in (parse_log(name, text) for name, text in sorted(files.items()))
            if log.entries]
    if not logs:
        raise ValueError("no structured-trace entries found (the files TORCH_TRACE=DIR writes "
                         "are DIR/dedicated_log_torch_trace_*.log)")
    chosen = next((log for log in logs if log.rank == (rank or 0)), None)
    if chosen is None and rank is not None:
        raise ValueError(f"no log of rank {rank} among {', '.join(log.name for log in logs)}")
    chosen = chosen or logs[0]
    environment = {"torch": chosen.torch_version, "trace_log": chosen.name}
    notes = [f"From the TORCH_TRACE log {chosen.name}"
             + (f" (rank {chosen.rank})" if chosen.rank is not None else "")
             + ": the stages PyTorch's structured trace holds. Bytecode, node tables, the Core "
             "ATen and prims views, loop-level IR and timings come only from a run in torchbolt."]
    notes += [f"Also in the folder: {log.name}" + (f" (rank {log.rank})" if log.rank is not None
                                                 else "") for log in logs if log is not chosen]
    if chosen.skipped_lines:
        notes.append(f"{chosen.skipped_lines} lines of {chosen.name} were not trace entries "
                     "and were skipped")
    records = [{"name": "environment", "compile_id": None, "t": 0, "meta": environment,
                "payload": None}, *chosen.records,
               *({"name": "note", "compile_id": None, "t": 0, "meta": {"text": note},
                  "payload": None} for note in notes)]
    return build_result(records, user_file_of(chosen.records), {"options": {}})


def placeholder_source(result: dict, hint: str) -> str:
    """What the editor shows for a log, whose script's source the log does not hold."""
    return (f"# No source: this is the TORCH_TRACE log {result['environment']['trace_log']}\n"
            f"# of {result['user_file'] or 'a script'}. {hint}\n")


def main() -> None:
    """`python -m compiler_core.report.trace_log`: the server reads an upload in a process of
    its own (`compiler_core/supervisor/uploads.py`). stdin: `{"folder", "names": {file: shown
    name}}`; stdout: the result's stored form; exit 3 with the reason on stderr when the files
    hold no trace."""
    import os
    import sys

    from .stored import compress_result
    request = json.load(sys.stdin)
    files = {}
    for file, shown in request["names"].items():
        with open(os.path.join(request["folder"], file), "rb") as fh:
            files[shown] = fh.read().decode("utf-8", errors="replace")
    try:
        result = trace_result(files)
    except ValueError as exc:
        sys.stderr.write(str(exc)[:2000])
        sys.exit(3)
    sys.stdout.buffer.write(compress_result(result))


if __name__ == "__main__":
    main()
