"""The stage registry: every stage module, in the order the page lists their stages.

A module declares `SPECS` (one `spec.Stage` per stage it produces). Modules of per-compile
artifacts (`field == "stages"`) also define `extract(compile_records) -> {stage: artifact}`;
`kernels` and `timings` are filled by result.py from their own records. Adding a stage is one
module plus one line here.
"""

from . import (aot, bytecode, decomp, dynamo, export, guards, inductor, kernels, metrics, timings, torchscript, triton_ir)
from .breaks import PROGRESS
from .spec import Stage

MODULES = (bytecode, dynamo, guards, aot, decomp, inductor, kernels, timings, metrics, triton_ir,
           export, torchscript)

STAGES: tuple[Stage, ...] = tuple(spec for module in MODULES for spec in module.SPECS)
EXTRACTORS = tuple(m for m in MODULES if all(spec.field == "stages" for spec in m.SPECS))
STAGE_NAMES = tuple(spec.name for spec in STAGES if spec.field == "stages")
GRAPH_STAGES = tuple(spec.name for spec in STAGES if spec.graph)

# Which stage a record announces, for progress lines and live events (first spec wins).
RECORD_STAGE: dict[str, str] = {**PROGRESS}
for _spec in STAGES:
    for _record in _spec.records:
        RECORD_STAGE.setdefault(_record, _spec.name)
