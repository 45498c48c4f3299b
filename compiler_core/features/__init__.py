"""The feature registry: one module per capability, in the order the result is built and the
page lists their stages.

Each module ends with a `spec.Feature`: its capture attachment (run in the job process before
the script, `runtime/runner.py`), its record types (held at the trust boundary,
`report/result.py`), its stage extraction and its parts of the result. Adding a capability is one
module plus one line here; everything below derives from the declarations.
"""

from . import (aot, autotune, breaks, bytecode, calls, census, compiled_autograd, cudagraphs,
               decomp, dynamo, export, frames, fusion, guards, inductor, job, kernels,
               kernels_stage, metrics, precompile, recompiles, saved, timings, torchscript,
               triton_ir, wrappers)
from .spec import ARTIFACT, EVENT, Feature, Part, RecordType, Stage

# Order matters where a part reads another's: kernels before triton_ir (which annotates them)
# and fusion; recompiles before calls; export's packages after its programs; the Kernels stage
# after what it shows (kernels, triton_ir's preview, fusion, timings, calls). Attachments run in
# this order too: the IR loggers (inductor) before the fusion log that ends on one (fusion), the
# compile recorder (calls) before the AOTInductor one that wraps its compile (export).
_LISTED: tuple[Feature, ...] = tuple(m.FEATURE for m in (
    job, frames, bytecode, dynamo, guards, aot, wrappers, compiled_autograd, saved, decomp,
    inductor, kernels, timings, metrics, triton_ir, fusion, autotune, breaks, recompiles, calls,
    export, torchscript, precompile, cudagraphs, kernels_stage))
STAGES: tuple[Stage, ...] = tuple(spec for feature in _LISTED for spec in feature.stages)
STAGE_NAMES = tuple(spec.name for spec in STAGES if spec.field == "stages")
GRAPH_STAGES = tuple(spec.name for spec in STAGES if spec.graph)
FEATURES: tuple[Feature, ...] = _LISTED + (census.feature(GRAPH_STAGES),)

ATTACHMENTS: tuple[str, ...] = tuple(dict.fromkeys(a for f in FEATURES for a in f.attach))


def _record_types() -> dict[str, tuple[str, RecordType]]:
    """Record name -> (its feature, its type); a name has one owner."""
    owners: dict[str, tuple[str, RecordType]] = {}
    for feature in FEATURES:
        for record_type in feature.records:
            assert record_type.name not in owners, f"{record_type.name} declared twice"
            owners[record_type.name] = (feature.name, record_type)
    return owners


RECORD_TYPES = _record_types()
# The structured-trace entries read (live and from a log): what the features declared `traced`.
TRACE_EVENTS = frozenset(n for n, (_, t) in RECORD_TYPES.items() if EVENT in t.trace)
TRACE_ARTIFACTS = frozenset(n for n, (_, t) in RECORD_TYPES.items() if ARTIFACT in t.trace)

# Which stage a record announces, for progress lines and live events (first spec wins).
RECORD_STAGE: dict[str, str] = {}
for _spec in STAGES:
    for _record in _spec.records:
        RECORD_STAGE.setdefault(_record, _spec.name)
# The records announced live as progress markers, not stages (entries of run-level lists).
RECORD_MARKER: dict[str, str] = {**breaks.PROGRESS, **recompiles.PROGRESS}

__all__ = ["ATTACHMENTS", "FEATURES", "GRAPH_STAGES", "RECORD_MARKER", "RECORD_STAGE",
           "RECORD_TYPES", "STAGES", "STAGE_NAMES", "TRACE_ARTIFACTS", "TRACE_EVENTS", "Feature",
           "Part", "RecordType", "Stage"]
