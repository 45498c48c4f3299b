"""Build the one result document from a job's records: a pure function, runnable on any prefix.

The features (`compiler_core.features`) fill it: each record is first held to the type its
feature declared (a record that fails costs only itself, named in `stage_errors`), then every
feature's stage extraction runs on each compile, then the features' parts in registry order.
One part failing is recorded in `stage_errors` with its fallback and the others still arrive
(strict mode raises instead, for tests). Records come from the job, so every part of the result
is built in such a step, run-level lists too. Texts past `stage_text_chars` are cut; each cut is
listed in `truncated`, naming the limit. The records of a stage's text are cut just past that
limit before they are read (reading costs the builder per line: text it would cut costs nothing),
and the stage's text is cut to it after, with the mark.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..compile_ids import renumbered
from ..features import FEATURES, RECORD_TYPES, STAGES
from ..features.spec import step_error
from ..limits import limit
from ..wire import unpacked
from .conform import conform

# 2: guards carry row and symbolic, recompiles failed_guards; 3: a compile's Kernels stage is in
# its stages (the page built it before)
RESULT_VERSION = 3
# The records whose payloads are stage texts.
TEXT_RECORDS = frozenset(r for spec in STAGES if spec.field == "stages" for r in spec.records)
UNREAD = ("torchbolt's reader failed on what PyTorch logged for this stage; the compile's other "
          "stages are unaffected.")


@dataclass
class Records:
    """Records in arrival order, with their lists by name (built once)."""
    records: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._by_name: dict[str, list[dict]] = {}
        for record in self.records:
            self._by_name.setdefault(record["name"], []).append(record)

    def all(self, name: str) -> list[dict]:
        return self._by_name.get(name, [])

    def first(self, name: str) -> dict | None:
        found = self._by_name.get(name)
        return found[0] if found else None


@dataclass
class CompileRecords(Records):
    """The records of one compile id."""
    compile_id: str | None = None
    user_file: str = ""


@dataclass
class RunRecords(Records):
    """All of a job's records, with what the run-level parts read besides: the compiles built,
    the result so far, what only the supervisor knows (`run`) and the cuts made."""
    user_file: str = ""
    run: dict = field(default_factory=dict)
    compiles: list[dict] = field(default_factory=list)
    result: dict = field(default_factory=dict)
    truncated: list[dict] = field(default_factory=list)


def typed_records(records: list[dict], stage_errors: list[dict]) -> list[dict]:
    """The records that have the type their feature declared; each other one is dropped and
    named in `stage_errors`, with its feature (names no feature reads pass as they are)."""
    kept = []
    for record in records:
        owner = RECORD_TYPES.get(record["name"])
        problem = owner[1].problem(record) if owner else None
        if problem is None:
            kept.append(record)
        else:
            stage_errors.append(step_error(
                record["compile_id"], record["name"],
                f"a {record['name']} record was dropped: {problem} ({owner[0]})"))
    return kept


def group_by_compile(records: list[dict], user_file: str) -> list[CompileRecords]:
    groups: dict[str, list[dict]] = {}
    for record in records:
        cid = record.get("compile_id")
        if cid is not None:
            groups.setdefault(cid, []).append(record)
    return [CompileRecords(group, cid, user_file) for cid, group in groups.items()]


class _Steps:
    """Runs extraction steps: a step that fails is recorded in `stage_errors` with its fallback
    value, and the other steps go on (strict mode raises instead)."""

    def __init__(self, compile_id: str | None, strict: bool, stage_errors: list[dict]):
        self.compile_id, self.strict, self.stage_errors = compile_id, strict, stage_errors

    def run(self, name: str, fn, fallback, stages: tuple[str, ...] = ()):
        """`stages`: the stages the step makes, named in its error (the page shows it in their
        place)."""
        try:
            return fn()
        except Exception as exc:
            if self.strict:
                raise
            error = step_error(self.compile_id, name, f"{type(exc).__name__}: {exc}")
            if stages:
                error.update(stages=list(stages), reason=UNREAD)
            self.stage_errors.append(error)
            return fallback

    def parts(self, parts, target: dict, *args) -> None:
        """Run each part, storing what it built under its field (a field-less part changes
        what earlier parts built)."""
        for part in parts:
            value = self.run(part.name or part.field, lambda p=part: p.build(*args),
                             part.fallback)
            if part.field is not None:
                target[part.field] = value


def announced(feature, group: CompileRecords) -> tuple[str, ...]:
    """The feature's stages of this compile whose announcing record arrived: those its
    extraction would have made."""
    return tuple(spec.name for spec in feature.stages
                 if spec.field == "stages" and any(group.first(name) for name in spec.records))


def build_compile(group: CompileRecords, strict: bool, stage_errors: list[dict]) -> dict:
    steps = _Steps(group.compile_id, strict, stage_errors)
    compiled: dict = {"id": group.compile_id, "stages": {}}
    for feature in FEATURES:
        if feature.makes_artifacts:
            compiled["stages"].update(steps.run(
                f"compiler_core.features.{feature.name}", lambda f=feature: f.artifacts(group),
                {}, stages=announced(feature, group)))
    for feature in FEATURES:
        steps.parts(feature.compile_parts, compiled, group, compiled)
    return compiled


def shared_values(compiled: dict, texts: dict[str, str], last: dict[tuple, list | dict]) -> dict:
    """The compile, with what equals an earlier compile's replaced by that (in place): each
    stage text equal to an earlier one, and each other list or dict of a stage (line maps,
    guards, kernels) equal to that of the same stage of the last compile that had it, else each
    of its items equal to the item there at the same place. A recompile that Inductor's caches
    answer joins the same texts again (post-grad graphs, output code) and makes the same rows of
    them, and its guards differ from the last compile's in a few rows: the result holds them
    once (`texts`: the texts seen so far; `last`: (stage, field) -> the last value seen). The
    parts after read what they share and never change it but where it is the same for all."""
    for name, stage in compiled["stages"].items():
        if not isinstance(stage, dict):
            continue
        for key, value in stage.items():
            if key == "text" and isinstance(value, str):
                stage[key] = texts.setdefault(value, value)
            elif isinstance(value, (list, dict)):
                stage[key] = last[name, key] = _shared(value, last.get((name, key)))
    return compiled


def _shared(value: list | dict, earlier):
    if earlier is None or type(earlier) is not type(value):
        return value
    if earlier == value:
        return earlier
    if isinstance(value, list):
        return [old if old == new else new for old, new in zip(earlier, value)] + \
            value[len(earlier):]
    return value


def cut_stage_records(records: list[dict], truncated: list[dict]) -> list[dict]:
    """The records with each stage's text payloads (one compile's records of one name) cut to
    one character past `stage_text_chars` in all, so that a text cut here is still over the
    limit when the stage's text is cut and marked; each cut is listed in `truncated`. Cut
    records are copies."""
    cap = limit("stage_text_chars") + 1
    kept: dict[tuple, int] = {}
    over: dict[tuple, int] = {}
    out = []
    for record in records:
        payload = record.get("payload")
        if record.get("name") in TEXT_RECORDS and isinstance(payload, str):
            group = (record.get("compile_id"), record["name"])
            room = max(cap - kept.get(group, 0), 0)
            if len(payload) > room:
                over[group] = over.get(group, 0) + len(payload) - room
                record = {**record, "payload": payload[:room]}
            kept[group] = kept.get(group, 0) + len(record["payload"])
        out.append(record)
    truncated += [{"limit": "stage_text_chars", "message": (
        f"{compile_id} {name}: {cap + extra:,} characters of records, cut to the first {cap:,} "
        "before reading")} for (compile_id, name), extra in over.items()]
    return out


def cut_stage_texts(run: RunRecords) -> None:
    """Cut every stage text over `stage_text_chars`, with a visible mark (in place)."""
    result = run.result
    for owner in (*result["compiles"], *result["exports"], *result["torchscript"]):
        for name, stage in owner.get("stages", {}).items():
            cut_stage_text(owner, name, stage, run.truncated)


def cut_stage_text(owner: dict, name: str, stage: dict, truncated: list[dict]) -> None:
    """Cut `stage`'s text if it is over `stage_text_chars`, with a visible mark, and list the
    cut in `truncated` (in place)."""
    cap, text = limit("stage_text_chars"), stage.get("text")
    if isinstance(text, str) and len(text) > cap:
        kept = text[:cap]
        stage["text"] = kept + (f"\n[... cut by torchbolt: {len(text):,} characters, "
                                f"the first {cap:,} shown (stage_text_chars) ...]")
        stage["src_lines"] = stage.get("src_lines", [])[:kept.count("\n") + 1] + [None]
        stage["truncated"] = True
        truncated.append({"limit": "stage_text_chars", "message": (
            f"{owner.get('id')} {name}: {len(text):,} characters cut to {cap:,}")})


def build_result(records: list[dict], user_file: str, run: dict | None = None,
                 strict: bool = False) -> dict:
    """The result document. `run` carries what only the supervisor knows (output, exit, limits)."""
    run = run or {}
    stage_errors: list[dict] = []
    truncated = list(run.get("truncated", []))
    # kept records (wire.packed) too; a log's ids that PyTorch numbered again, kept apart
    records = renumbered([unpacked(record) for record in records])
    records = typed_records(cut_stage_records(records, truncated), stage_errors)
    texts: dict[str, str] = {}
    last: dict[tuple, list | dict] = {}
    compiles = [shared_values(build_compile(g, strict, stage_errors), texts, last)
                for g in group_by_compile(records, user_file)]
    result = {"version": RESULT_VERSION, "options": run.get("options", {}),
              "user_file": user_file, "stdout": run.get("stdout", ""),
              "stderr": run.get("stderr", ""), "duration_s": run.get("duration_s"),
              "compiles": compiles, "stage_errors": stage_errors}
    whole = RunRecords(records, user_file, run, compiles, result, truncated)
    steps = _Steps(None, strict, stage_errors)
    for feature in FEATURES:
        steps.parts(feature.run_parts, result, whole)
    steps.run("stage_text_chars", lambda: cut_stage_texts(whole), None)
    result["truncated"] = whole.truncated
    steps.run("schema", lambda: conform(result), None)
    return result
