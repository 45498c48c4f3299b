"""Why CUDA graphs were skipped or recorded again (`result["cudagraphs"]`).

Built from the `cudagraph_log` records `runtime/hooks/cudagraphs.py` writes (each line of
Inductor's `cudagraphs` logging artifact, with the function the CUDA graph tree manager was
running, the user's line and whether CUDA graphs were on). The messages are PyTorch's, parsed by string search
(they come from the job, so no backtracking regex), each list bounded. The scheduler logs its
graph partitions on every GPU compile, CUDA graphs on or off ("partition includes all ops when
cudagraphs is disabled"): lines it logged with them off are left out, so a run that did not use
CUDA graphs has no report. A recording is a CUDA graph recorded ("Recording function=...",
each with its `cuda_graph_id`); "Recording cudagraph tree for ..." (a tree per input size, before
any graph is recorded) stays a message.

Message forms (torch 2.13, `cudagraph_trees.py`, `cudagraph_utils.py`, `scheduler.py`; torch
2.11 names no mode, and no compile id in "Recording cudagraph tree for ..."):
`skipping cudagraphs due to mutated inputs (1 instances). Found from : \\n File "x.py", line 5`,
`[0/0] Recording cudagraph tree for symint key 8`, `[0/0] Recording function=f, mode=INFERENCE,
cuda_graph_id=0, inputs: ...`, `[0/0] Re-recording function=f, mode=INFERENCE, reason=...`,
`Created 2 graph partitions: 1 cudagraphable, 1 non-cudagraphable` and its indented lines.
"""

from __future__ import annotations

from ..parsers.common import last_user_line
from .spec import Feature, Part, record

ENTRIES = 200  # per list of the report
TEXT = 4000  # one message
PARTITION_LOGGER = "scheduler.__cudagraphs"  # torch._inductor.scheduler's artifact logger


def _text(value, cap: int = TEXT) -> str:
    return str(value)[:cap]


def split_compile_id(message: str) -> tuple[str | None, str]:
    """`[0/1] Recording ...` -> ("0/1", "Recording ..."); a message without the prefix as is."""
    end = message.find("] ", 1, 70) if message.startswith("[") else -1
    if end < 0:
        return None, message
    return message[1:end] or None, message[end + 2:]


def _fields(text: str, names: tuple[str, ...]) -> dict:
    """`function=f, mode=M, reason=R` -> the values of `names` (None for one the text lacks:
    torch 2.11 names no mode); each runs to the next name found, the last to the end (a reason
    holds commas and lines)."""
    found, at = [], 0
    for name in names:
        start = text.find(f"{name}=", at)
        if start >= 0:
            found.append((name, start))
            at = start + len(name) + 1
    out = dict.fromkeys(names)
    for i, (name, start) in enumerate(found):
        value = text[start + len(name) + 1:found[i + 1][1] if i + 1 < len(found) else len(text)]
        out[name] = value.removesuffix(", ") if i + 1 < len(found) else value
    return out


def _with_cudagraphs_off(meta: dict) -> bool:
    """A partition line the scheduler logged while CUDA graphs were off (records without the
    flag, from before it was recorded, count as on)."""
    return meta.get("cudagraphs") is False and str(meta.get("logger", "")).endswith(
        PARTITION_LOGGER)


def _optional(value, kind: type):
    return value if isinstance(value, kind) and not isinstance(value, bool) else None


def _cudagraph_lines(records: list[dict]) -> list[dict]:
    lines = []
    for record in records:
        meta = record["meta"]
        if record["name"] != "cudagraph_log" or _with_cudagraphs_off(meta):
            continue
        named, message = split_compile_id(_text(meta.get("message", "")))
        function = _optional(meta.get("function"), str)
        lines.append({"compile_id": record["compile_id"] or named,
                      "level": _text(meta.get("level", ""), 20), "text": message,
                      "function": function and _text(function, 200),
                      "line": _optional(meta.get("line"), int)})
    return lines


def _entry(line: dict, user_file: str, kind: str, text: str) -> dict:
    """A skip names the line its reason's stack trace names, else the user's line that ran."""
    compile_id = line["compile_id"]
    if kind == "skips":
        return {"compile_id": compile_id, "function": line["function"], "reason": text,
                "line": last_user_line(text, user_file) or line["line"]}
    if kind == "rerecords":
        fields = _fields(text, ("function", "mode", "reason"))
        reason = fields["reason"] or text
        return {"compile_id": compile_id, "function": fields["function"] or line["function"],
                "mode": fields["mode"], "reason": reason,
                "line": last_user_line(reason, user_file) or line["line"]}
    fields = _fields(text, ("function", "mode", "cuda_graph_id"))
    return {"compile_id": compile_id, "function": fields["function"] or line["function"],
            "mode": fields["mode"], "detail": text}


def _kind(text: str) -> str | None:
    if text.startswith("skipping cudagraph"):
        return "skips"
    if text.startswith("Re-recording "):
        return "rerecords"
    if text.startswith("Recording function="):
        return "recordings"
    if text.startswith("Created ") and "graph partitions" in text:
        return "partitions"
    return None


def cudagraphs(records: list[dict], user_file: str) -> dict | None:
    """What Inductor's CUDA graph machinery said in this run; None where the run did not use
    CUDA graphs (no `reduce-overhead` or `max-autotune` compile on a GPU)."""
    lines = _cudagraph_lines(records)
    if not lines:
        return None
    report = {"skips": [], "recordings": [], "rerecords": [], "partitions": [],
              "messages": [{k: line[k] for k in ("compile_id", "level", "text")}
                           for line in lines[:ENTRIES]],
              "truncated": len(lines) > ENTRIES}
    for line in lines:
        kind = _kind(line["text"])
        partitions = report["partitions"]
        if kind is None and line["text"].startswith(" ") and partitions and \
                partitions[-1]["compile_id"] == line["compile_id"]:  # a partition's detail line
            partitions[-1]["text"] = (partitions[-1]["text"] + "\n" + line["text"])[:TEXT]
        elif kind is not None and len(report[kind]) >= ENTRIES:
            report["truncated"] = True
        elif kind == "partitions":
            partitions.append({"compile_id": line["compile_id"], "text": line["text"]})
        elif kind is not None:
            report[kind].append(_entry(line, user_file, kind, line["text"]))
    return report


FEATURE = Feature(
    "cudagraphs", records=(record("cudagraph_log"),),
    attach=("runtime.hooks.cudagraphs:attach",),
    run_parts=(Part("cudagraphs", lambda run: cudagraphs(run.all("cudagraph_log"), run.user_file)),))
