"""What a capability is, declared once: each feature module ends with one `Feature`.

A feature names its capture attachment (a function of the job process, run before the script),
the records it reads (typed: checked where the result is built, since the job wrote them), its
stage specs, and how it fills the result: `extract` gives a compile's stage artifacts, its
`compile_parts` fill the other fields of a compile and its `run_parts` the run's fields. The
registry (`features/__init__.py`) lists the features in order; the job's runner attaches them and
the result builder runs their parts in that order, so a part may read what an earlier one built.
Everything else derives from these declarations: the stage order, which record announces a
stage (progress lines and live events), which stages are FX graphs (the page's graph drawing),
the artifacts' titles and languages, and the page's labels (through the catalogue).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable

TEXT, INTEGER, LIST, OBJECT = "text", "integer", "list", "object"  # a meta field's kind


@dataclass(frozen=True)
class Stage:
    name: str
    label: str  # short name, for menus
    title: str  # the artifact's title
    language: str  # of the text: python, pycon, text, json, cpp, mlir, llvm, ptx, sass
    records: tuple[str, ...] = ()  # the first of these records of a compile announces the stage
    graph: bool = False  # an FX graph: nodes and edges can be drawn
    field: str = "stages"  # where a compile holds it ("kernels"; "timings" is the run's)
    option: str | None = None  # the run option without which the stage is left out

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "records"}


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


@dataclass(frozen=True)
class Part:
    """One field a feature fills: of a compile, `build(group, compiled)`, or of the run,
    `build(run)` (`report.result.RunRecords`). A part whose `field` is None changes what
    earlier parts built (notes, links) and returns nothing. `fallback` stands in when it fails."""
    field: str | None
    build: Callable
    fallback: object = None
    name: str | None = None  # in `stage_errors` when it fails (default: the field)


@dataclass(frozen=True)
class Feature:
    name: str
    records: tuple[RecordType, ...] = ()
    stages: tuple[Stage, ...] = ()
    attach: tuple[str, ...] = ()  # "runtime.module:function", called with the CaptureSession
    extract: Callable | None = None  # CompileRecords -> {stage name: artifact}
    compile_parts: tuple[Part, ...] = ()
    run_parts: tuple[Part, ...] = ()
