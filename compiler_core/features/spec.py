"""What a capability is, declared once: each feature module ends with one `Feature`.

A feature names its capture attachment (a function of the job process, run before the script),
the records it reads (typed: checked where the result is built, since the job wrote them), its
stage specs, and how it fills the result: `extract` gives a compile's stage artifacts, its
`compile_parts` fill the other fields of a compile and its `run_parts` the run's fields. The
registry (`features/__init__.py`) lists the features in order; the job's runner attaches them and
the result builder runs their parts in that order, so a part may read what an earlier one built.
Everything else derives from these declarations: the stage order, which record announces a
stage (progress lines and live events), which stages are FX graphs (the page's graph drawing),
the artifacts' titles and languages, the page's labels (through the catalogue), the result
schema's stage names (`report/conform.py`) and which structured-trace entries are read, live and
from a log (`traced` records, `report/trace_log.py`). A stage whose artifact is its record's text
as PyTorch wrote it is one line, `payload_stage(...)`, with no extraction of its own.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable

from ..parsers.common import artifact, fx_src_lines

TEXT, INTEGER, LIST, OBJECT = "text", "integer", "list", "object"  # a meta field's kind
# How PyTorch's structured trace writes a record: as an event (`trace_structured(name)`, the
# entry's key) or as an artifact (`{"artifact": {"name": name}}`).
EVENT, ARTIFACT = "event", "artifact"


@dataclass(frozen=True)
class Stage:
    name: str
    label: str  # short name, for menus
    title: str  # the artifact's title
    language: str  # of the text: python, pycon, text, json, cpp, mlir, llvm, ptx, sass
    records: tuple[str, ...] = ()  # the first of these records of a compile announces the stage
    graph: bool = False  # an FX graph: nodes and edges can be drawn
    field: str = "stages"  # a compile's; a program's: "exports", "torchscript"; the run's "timings"
    option: str | None = None  # the run option without which the stage is left out
    from_payload: bool = False  # its artifact is the first announcing record's text (below)
    heading: str = ""  # from_payload: text put before the record's
    # The page's view of it (static/js/views/<view>.js; default: "fx" for a graph, else "text"),
    # its panel (views/index.js: "saved", what AOTAutograd saved for the backward, beside the
    # text; "aoti", the package's JIT vs AOT times, above it), and the stage a pane shows where
    # a compile lacks this one (training vs inference).
    view: str = ""
    panel: str | None = None
    counterpart: str | None = None

    def to_json(self) -> dict:
        out = {k: v for k, v in asdict(self).items()
               if k not in ("records", "from_payload", "heading")}
        return {**out, "view": self.view or ("fx" if self.graph else "text")}


def payload_stage(name: str, label: str, title: str, record_name: str, *, graph: bool = True,
                  language: str = "python", **more) -> Stage:
    """A stage whose artifact is its record's text as PyTorch wrote it, an FX graph's lines
    mapped to the user's (tlparse gives each such artifact a one-line parser; so does this)."""
    return Stage(name, label, title, language, records=(record_name,), graph=graph,
                 from_payload=True, **more)


def payload_artifact(stage: Stage, compile_records) -> dict | None:
    """A payload stage's artifact: the first record's text after the stage's heading (None
    without the record or text)."""
    found = compile_records.first(stage.records[0])
    text = stage.heading + ((found or {}).get("payload") or "")
    if found is None or not text:
        return None
    return artifact(stage.name, compile_records.compile_id, stage.title, stage.language, text,
                    fx_src_lines(text, compile_records.user_file))


def _is(kind: str, value) -> bool:
    if kind == TEXT:
        return isinstance(value, str)
    if kind == INTEGER:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, list if kind == LIST else dict)


@dataclass(frozen=True)
class RecordType:
    """A record a feature reads: the meta fields its parts rely on, each with its kind (a kind
    ending in `?` may also be null), and whether it carries a text payload. Fields left out are
    read defensively by the parts, as PyTorch's own artifacts grow fields between versions."""
    name: str
    meta: tuple[tuple[str, str], ...] = ()
    payload: bool = False
    trace: tuple[str, ...] = ()  # EVENT, ARTIFACT: how the structured trace writes it (if it does)

    def problem(self, record: dict) -> str | None:
        """Why the record does not have this type (None: it does)."""
        if self.payload and not isinstance(record.get("payload"), str):
            return "it has no text payload"
        meta = record["meta"]
        for field, kind in self.meta:
            value = meta.get(field)
            if kind.endswith("?") and value is None:
                continue
            if not _is(kind.rstrip("?"), value):
                return f"its meta field {field!r} is not {kind.rstrip('?')}"
        return None


def record(name: str, payload: bool = False, /, **meta: str) -> RecordType:
    """`record("fx_nodes", nodes=LIST)`: a record type, its meta fields given by keyword."""
    return RecordType(name, tuple(meta.items()), payload)


def traced(name: str, *kinds: str, **meta: str) -> RecordType:
    """`traced("recompile_reasons", ARTIFACT)`: a record PyTorch's structured trace writes, under
    its name there, as an event unless `kinds` say otherwise. Only declared entries are read."""
    return RecordType(name, tuple(meta.items()), trace=kinds or (EVENT,))


@dataclass(frozen=True)
class Part:
    """One field a feature fills: of a compile, `build(group, compiled)`, or of the run,
    `build(run)` (`report.result.RunRecords`). A part whose `field` is None changes what
    earlier parts built (notes, links) and returns nothing. `fallback` stands in when it fails."""
    field: str | None
    build: Callable
    fallback: object = None
    name: str | None = None  # its `step` in `stage_errors` when it fails (default: the field)


def step_error(compile_id: str | None, step: str, message: str, **more) -> dict:
    """A `stage_errors` entry: the `step` that failed (an extraction, a record's check, a part,
    the schema check, a job-side step: named after the stage it makes, where it makes one), of
    a compile or of the whole job (`compile_id` None); a failed extraction adds the `stages` it
    would have made. `stage` repeats `step` for clients written before it (results stored
    before it name the step `stage` only)."""
    return {"compile_id": compile_id, "step": step, "stage": step, "message": message, **more}


@dataclass(frozen=True)
class Feature:
    name: str
    records: tuple[RecordType, ...] = ()
    stages: tuple[Stage, ...] = ()
    attach: tuple[str, ...] = ()  # "runtime.module:function", called with the CaptureSession
    extract: Callable | None = None  # CompileRecords -> {stage name: artifact}
    compile_parts: tuple[Part, ...] = ()
    run_parts: tuple[Part, ...] = ()

    @property
    def makes_artifacts(self) -> bool:
        return self.extract is not None or any(stage.from_payload for stage in self.stages)

    def artifacts(self, compile_records) -> dict:
        """A compile's artifacts of this feature's stages: its payload stages', then what its
        `extract` makes."""
        out = {stage.name: made for stage in self.stages
               if stage.from_payload and (made := payload_artifact(stage, compile_records))}
        if self.extract is not None:
            out.update(self.extract(compile_records))
        return out
