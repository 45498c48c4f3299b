"""Stages of `torch.jit.trace` / `torch.jit.script`, one entry per TorchScript function or
module the script made: `result["torchscript"] = [{"id", "line", "kind", "stages", "warnings"}]`.

`torchscript_graph` is the inlined TorchScript IR; each node ends with the source range it came
from (`# /path/script.py:4:15`), which links it to the user's line. `torchscript_code` is the
same program as TorchScript prints it back as Python: a trace has no `if` where the script made a
`prim::If` (the branch taken was baked in, which the trace's TracerWarning says).
"""

from __future__ import annotations

import re

from ..parsers.common import is_user_file, program_stages
from .spec import LIST, OBJECT, TEXT, Feature, Part, Stage, record

SPECS = (
    Stage("torchscript_graph", "TorchScript graph", "TorchScript graph (inlined IR)", "text",
          field="torchscript"),
    Stage("torchscript_code", "TorchScript code", "TorchScript code", "python",
          field="torchscript"),
)
SOURCE_RANGE = re.compile(r"# (?P<file>\S+):(?P<line>\d+):\d+\s*$")


def _src_lines(text: str, user_file: str) -> list[int | None]:
    out = []
    for line in text.split("\n"):
        match = SOURCE_RANGE.search(line)
        out.append(int(match["line"]) if match and is_user_file(match["file"], user_file)
                   else None)
    return out


def programs(run) -> list[dict]:
    """One entry per `torchscript` record of the run (`report.result.RunRecords`)."""
    out = []
    for record in run.all("torchscript"):
        meta = record["meta"]
        pid = f"{meta['kind']}-{meta['index']}"
        out.append({"id": pid, "line": meta["line"], "kind": meta["kind"],
                    "warnings": meta["warnings"], "stages": program_stages(
                        SPECS, pid, meta["stages"], lambda text: _src_lines(text, run.user_file))})
    return out


FEATURE = Feature(
    "torchscript",
    records=(record("torchscript", kind=TEXT, warnings=LIST, stages=OBJECT),),
    stages=SPECS, attach=("runtime.programs:attach",),
    run_parts=(Part("torchscript", programs, []),))
