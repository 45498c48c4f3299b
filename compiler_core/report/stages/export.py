"""Stages of `torch.export.export` (the AOT path), one entry per ExportedProgram the script made:
`result["exports"] = [{"id", "line", "stages": {stage: artifact}}]`.

`exported_program` is the program as PyTorch prints it: the ATen graph with its signature
(`# File:` comments link nodes to user lines), the graph signature and the range constraints;
`export_core_aten` is that program after `run_decompositions()` (Core ATen).
"""

from __future__ import annotations

from .common import fx_src_lines, program_stages
from .spec import Stage

SPECS = (
    Stage("exported_program", "Exported program (torch.export)",
          "torch.export: ExportedProgram (graph, graph signature, range constraints)", "python",
          field="exports"),
    Stage("export_core_aten", "Exported program, Core ATen",
          "torch.export: ExportedProgram.run_decompositions() (Core ATen)", "python",
          field="exports"),
)


def programs(records: list[dict], user_file: str) -> list[dict]:
    out = []
    for record in records:
        if record["name"] != "export":
            continue
        meta = record["meta"]
        pid = f"export-{meta['index']}"
        out.append({"id": pid, "line": meta["line"], "stages": program_stages(
            SPECS, pid, meta["stages"], lambda text: fx_src_lines(text, user_file))})
    return out
