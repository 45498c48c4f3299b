"""Build the one result document from a job's records: a pure function, runnable on any prefix.

One stage failing to extract is recorded in `stage_errors` and the others still arrive (strict
mode raises instead, for tests).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .calls import calls
from .callsite import frame_of, user_line
from . import names
from .census import census
from .stages import EXTRACTORS, export, torchscript, triton_ir
from .stages.breaks import graph_breaks, recompiles
from .stages.guards import with_failed_guards
from .stages.kernels import extract_kernels

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


def build_compile(group: CompileRecords, strict: bool, stage_errors: list[dict]) -> dict:
    extraction = _Extraction(group, strict, stage_errors)
    stages: dict[str, dict] = {}
    for module in EXTRACTORS:
        stages.update(extraction.step(module.__name__, lambda m=module: m.extract(group), {}))
    extraction.step("names", lambda: names.annotate(stages), None)
    for record in group.all("stage_error"):
        stage_errors.append({"compile_id": group.compile_id, **record["meta"]})
    return {"id": group.compile_id, "frame": frame_of(group), "user_line": user_line(group),
            "stages": stages,
            "kernels": extraction.step("kernels", lambda: _kernels(group), []),
            "census": extraction.step("census", lambda: census(stages), {}),
            "has_graph": "dynamo_graph" in stages,
            "failure": failure_of(group), **triton_ir.compile_fields(group)}


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
    compiles = [build_compile(g, strict, stage_errors)
                for g in group_by_compile(records, user_file)]
    stage_errors += [r["meta"] for r in records  # run-level steps: timings, GPU preview ...
                     if r["name"] == "stage_error" and r["compile_id"] is None]
    error = _first_meta(records, "error") or run.get("error")
    recompile_list = with_failed_guards(recompiles(records), compiles)
    result = {
        "version": RESULT_VERSION,
        "environment": _first_meta(records, "environment") or {},
        "options": run.get("options", {}),
        "user_file": user_file,
        "stdout": run.get("stdout", ""),
        "stderr": run.get("stderr", ""),
        "error": error,
        "finished": _first_meta(records, "run_end") is not None,
        "duration_s": run.get("duration_s"),
        "compiles": compiles,
        "graph_breaks": graph_breaks(records, compiles, user_file),
        "recompiles": recompile_list,
        "calls": calls(records, recompile_list),
        "exports": export.programs(records, user_file),
        "torchscript": torchscript.programs(records, user_file),
        "timings": [r["meta"] for r in records if r["name"] == "timing"],
        "compiled_callables": compiled_callables(records),
        "stage_errors": stage_errors,
        "notes": [r["meta"]["text"] for r in records if r["name"] == "note"],
    }
    return result
