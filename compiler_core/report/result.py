"""Build the one result document from a job's records: a pure function, runnable on any prefix.

One stage failing to extract is recorded in `stage_errors` and the others still arrive (strict
mode raises instead, for tests). Records come from the job, so every part of the result is built
in such a step, run-level lists too: a malformed record costs its part of the result (named in
`stage_errors`), never an exception. Texts past `stage_text_chars` are cut and notes past
`notes_per_job` / `note_chars` dropped; each cut is listed in `truncated`, naming the limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..limits import LIMITS, limit
from ..features.calls import calls
from ..parsers.callsite import frame_of, user_line
from ..parsers import names
from ..features import recompile_reasons
from ..features.census import census
from .conform import conform
from ..features import EXTRACTORS, export, metrics, torchscript, triton_ir, why_gpu
from ..features.breaks import graph_breaks, recompiles
from ..parsers.common import is_int
from ..features.guards import with_failed_guards
from ..features.fusion import fusion
from ..features.kernels import extract_kernels
from ..features.saved import saved_activations

RESULT_VERSION = 2  # 2: guards carry row and symbolic, recompiles failed_guards


@dataclass
class CompileRecords:
    """The records of one compile id, in arrival order."""
    compile_id: str
    user_file: str
    records: list[dict] = field(default_factory=list)

    def all(self, name: str) -> list[dict]:
        return [r for r in self.records if r["name"] == name]

    def first(self, name: str) -> dict | None:
        return next((r for r in self.records if r["name"] == name), None)


def group_by_compile(records: list[dict], user_file: str) -> list[CompileRecords]:
    groups: dict[str, CompileRecords] = {}
    for record in records:
        cid = record.get("compile_id")
        if cid is not None:
            groups.setdefault(cid, CompileRecords(cid, user_file)).records.append(record)
    return list(groups.values())


class _Extraction:
    """Runs one compile's extraction steps: a step that fails is recorded in `stage_errors`
    with its fallback value, and the other steps go on (strict mode raises instead)."""

    def __init__(self, group: CompileRecords, strict: bool, stage_errors: list[dict]):
        self.group, self.strict, self.stage_errors = group, strict, stage_errors

    def step(self, name: str, fn, fallback):
        try:
            return fn()
        except Exception as exc:
            if self.strict:
                raise
            self.stage_errors.append({"compile_id": self.group.compile_id, "stage": name,
                                      "message": f"{type(exc).__name__}: {exc}"})
            return fallback


def _kernels(group: CompileRecords) -> list[dict]:
    kernels = extract_kernels(group)
    triton_ir.annotate(kernels, group)
    return kernels


def _stage_error(compile_id: str | None, meta: dict) -> dict:
    """A `stage_error` record as the result lists it (its fields forced to text)."""
    return {"compile_id": compile_id, "stage": str(meta.get("stage", "?"))[:200],
            "message": str(meta.get("message", ""))[:2000]}


def build_compile(group: CompileRecords, strict: bool, stage_errors: list[dict]) -> dict:
    extraction = _Extraction(group, strict, stage_errors)
    step = extraction.step
    stages: dict[str, dict] = {}
    for module in EXTRACTORS:
        stages.update(step(module.__name__, lambda m=module: m.extract(group), {}))
    step("names", lambda: names.annotate(stages), None)
    step("guard_counts", lambda: metrics.explain_guard_counts(stages), None)
    stage_errors += [_stage_error(group.compile_id, r["meta"]) for r in group.all("stage_error")]
    no_frame = {"name": None, "filename": None, "line": None, "qualname": None}
    kernels = step("kernels", lambda: _kernels(group), [])
    return {"id": group.compile_id, "frame": step("frame", lambda: frame_of(group), no_frame),
            "user_line": step("user_line", lambda: user_line(group), None),
            "stages": stages,
            "kernels": kernels,
            "fusion": step("fusion", lambda: fusion(group, kernels), None),
            "saved_activations": step("saved_activations", lambda: saved_activations(stages), None),
            "census": step("census", lambda: census(stages), {}),
            "has_graph": "dynamo_graph" in stages,
            "failure": step("failure", lambda: failure_of(group), None),
            "autotuning": step("autotuning", lambda: why_gpu.autotuning(group), []),
            **step("triton", lambda: triton_ir.compile_fields(group), {})}


def failure_of(group: CompileRecords) -> dict | None:
    """Why the compile failed (e.g. fullgraph=True hit a break), from PyTorch's metrics."""
    metrics = group.first("compilation_metrics")
    if metrics is None or not metrics["meta"].get("fail_type"):
        return None
    meta = metrics["meta"]
    line = meta.get("fail_user_frame_lineno")
    in_user_file = meta.get("fail_user_frame_filename") == group.user_file
    return {"type": meta["fail_type"], "reason": meta.get("fail_reason") or "",
            "line": line if in_user_file else None}


def _first_meta(records: list[dict], name: str) -> dict | None:
    return next((r["meta"] for r in records if r["name"] == name), None)


def _error(records: list[dict], run: dict) -> dict | None:
    """The job's own error record, if it has the error's shape, else what the supervisor saw."""
    meta = _first_meta(records, "error")
    if meta is None:
        return run.get("error")
    if not (isinstance(meta.get("type"), str) and isinstance(meta.get("message"), str)):
        raise ValueError("the job's error record lacks a type or message")
    line = meta.get("line")
    return {**meta, "line": line if is_int(line) else None}


def _notes(records: list[dict], truncated: list[dict]) -> list[str]:
    texts = [str(r["meta"].get("text", "")) for r in records if r["name"] == "note"]
    most, longest = limit("notes_per_job"), limit("note_chars")
    if len(texts) > most:
        truncated.append({"limit": "notes_per_job",
                          "message": f"{len(texts) - most} notes past the first {most} dropped"})
    long = [t for t in texts[:most] if len(t) > longest]
    if long:
        truncated.append({"limit": "note_chars", "message": f"{len(long)} notes cut to "
                                                           f"{longest:,} characters"})
    return [t[:longest] for t in texts[:most]]


# What Inductor's cpp.enable_kernel_profile adds to C++ kernels: a RECORD_FUNCTION per kernel
# (older torch), or on torch 2.13 an RAIIAtenRecordFunctionHandle per kernel and the include of
# the profiling helpers; the note quotes the first found.
PROFILE_MARKERS = ("RECORD_FUNCTION", "RAIIAtenRecordFunctionHandle",
                   "#include <torch/csrc/inductor/aoti_runtime/utils.h>")


def note_kernel_profile(compiles: list[dict], records: list[dict]) -> None:
    """Say so on the output code of the compiles whose kernels carry the profiling lines."""
    if not any(r["name"] == "kernel_profile" for r in records):
        return
    for compiled in compiles:
        stage = compiled["stages"].get("output_code")
        found = [m for m in PROFILE_MARKERS if stage and m in stage["text"]]
        if found:
            stage["source_note"] = (
                f"torchbolt turned on Inductor's cpp.enable_kernel_profile so that its timings "
                f"can time each kernel: `{found[0]}` in the kernels comes from it, and a plain "
                "torch.compile run has no such line")


def replay_output(records: list[dict]) -> dict | None:
    """What torchbolt's replays (timings, views) printed, kept apart from the script's stdout."""
    parts = [r["meta"] for r in records if r["name"] == "replay_output"]
    if not parts:
        return None
    return {"bytes": sum(int(p["bytes"]) for p in parts),
            "lines": sum(int(p["lines"]) for p in parts),
            "head": "".join(str(p["head"]) for p in parts)[:8192]}


def cut_stage_texts(result: dict, truncated: list[dict]) -> None:
    """Cut every stage text over `stage_text_chars`, with a visible mark (in place)."""
    cap = limit("stage_text_chars")
    for owner in (*result["compiles"], *result["exports"], *result["torchscript"]):
        for name, stage in owner.get("stages", {}).items():
            text = stage.get("text")
            if isinstance(text, str) and len(text) > cap:
                kept = text[:cap]
                stage["text"] = kept + (f"\n[... cut by torchbolt: {len(text):,} characters, "
                                        f"the first {cap:,} shown (stage_text_chars) ...]")
                stage["src_lines"] = stage.get("src_lines", [])[:kept.count("\n") + 1] + [None]
                stage["truncated"] = True
                truncated.append({"limit": "stage_text_chars", "message": (
                    f"{owner.get('id')} {name}: {len(text):,} characters cut to {cap:,}")})


def compiled_callables(records: list[dict]) -> list[dict]:
    """Each torch.compile'd callable, with the argument signatures it was called with."""
    calls: dict[int, list] = {}
    for record in records:
        if record["name"] == "compiled_call":
            calls.setdefault(record["meta"]["callable"], []).append(record["meta"]["arguments"])
    return [{**r["meta"], "calls": calls.get(r["meta"]["index"], [])}
            for r in records if r["name"] == "compiled_callable"]


def build_result(records: list[dict], user_file: str, run: dict | None = None,
                 strict: bool = False) -> dict:
    """The result document. `run` carries what only the supervisor knows (output, exit, limits)."""
    run = run or {}
    stage_errors: list[dict] = []
    truncated: list[dict] = list(run.get("truncated", []))
    compiles = [build_compile(g, strict, stage_errors)
                for g in group_by_compile(records, user_file)]
    part = _Extraction(CompileRecords(None, user_file, records), strict, stage_errors).step
    part("kernel_profile", lambda: note_kernel_profile(compiles, records), None)
    stage_errors += [_stage_error(None, r["meta"]) for r in records  # run-level steps: timings,
                     if r["name"] == "stage_error" and r["compile_id"] is None]  # GPU preview
    recompile_list = part("recompiles", lambda: recompile_reasons.annotate(
        with_failed_guards(recompiles(records), compiles), records, compiles, user_file), [])
    result = {
        "version": RESULT_VERSION,
        "environment": part("environment", lambda: dict(_first_meta(records, "environment")
                                                        or {}), {}),
        "options": run.get("options", {}),
        "user_file": user_file,
        "stdout": run.get("stdout", ""),
        "stderr": run.get("stderr", ""),
        "error": part("error", lambda: _error(records, run), run.get("error")),
        "finished": _first_meta(records, "run_end") is not None,
        "duration_s": run.get("duration_s"),
        "compiles": compiles,
        "graph_breaks": part("graph_breaks", lambda: graph_breaks(records, compiles,
                                                                  user_file), []),
        "recompiles": recompile_list,
        "calls": part("calls", lambda: calls(records, recompile_list), []),
        "exports": part("exports", lambda: export.programs(records, user_file), []),
        "torchscript": part("torchscript", lambda: torchscript.programs(records, user_file), []),
        "timings": [r["meta"] for r in records if r["name"] == "timing"],
        "compiled_callables": part("compiled_callables", lambda: compiled_callables(records),
                                   []),
        "stage_errors": stage_errors,
        "notes": _notes(records, truncated),
        "replay_output": part("replay_output", lambda: replay_output(records), None),
        "cudagraphs": part("cudagraphs", lambda: why_gpu.cudagraphs(records, user_file), None),
        "truncated": truncated,
    }
    part("aoti", lambda: export.attach_aoti(result["exports"], records, user_file), None)
    part("stage_text_chars", lambda: cut_stage_texts(result, truncated), None)
    part("schema", lambda: conform(result), None)
    return result
