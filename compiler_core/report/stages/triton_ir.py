"""Stages `triton_ttir`, `triton_ttgir`, `triton_llir`, `triton_ptx`, `triton_sass`: each Triton
kernel's lowering, one section per kernel; and the launch metadata of the compile's kernels.

Sources: `triton_kernel` records (kernels that ran on this job's GPU, see
`compiler_core.runtime.gpu.triton_kernels`), else the `gpu_preview` record (kernels compiled for a virtual GPU
on a CPU-only machine, see `compiler_core.runtime.gpu.preview`); such artifacts say so in their title and
in `preview`. `triton_autotune` and `autotune_choices` records hold the configs and template
choices benchmarked while the script ran.
"""

from __future__ import annotations

import os

from .common import artifact, join_sections
from .inductor import graph_labels
from .spec import Stage

# Kernels that ran on the job's GPU, or the GPU preview's, announce the first of these stages.
SPECS = tuple(
    Stage(f"triton_{suffix}", title, title, language,
          records=("triton_kernel", "gpu_preview") if suffix == "ttir" else ())
    for suffix, title, language in (("ttir", "Triton IR (TTIR)", "mlir"),
                                    ("ttgir", "Triton GPU IR (TTGIR)", "mlir"),
                                    ("llir", "LLVM IR", "llvm"), ("ptx", "PTX", "ptx"),
                                    ("sass", "SASS", "sass")))


def _label(kernel: dict) -> str:
    return f"{kernel['name']} (backward)" if kernel.get("is_backward") else kernel["name"]


def _kernels(compile_records) -> tuple[list[dict], dict | None]:
    """The kernels that ran here, else the previewed ones with the preview's record."""
    ran = [r["meta"] for r in compile_records.all("triton_kernel")]
    if ran:
        return ran, None
    preview = compile_records.first("gpu_preview")
    return (preview["meta"]["kernels"], preview["meta"]) if preview else ([], None)


def extract(compile_records) -> dict:
    kernels, preview = _kernels(compile_records)
    out = {}
    for spec in SPECS:
        stage, title, language = spec.name, spec.title, spec.language
        suffix = stage.removeprefix("triton_")
        parts = [(_label(k), k["stages"][suffix]) for k in kernels if k["stages"].get(suffix)]
        if not parts:
            continue
        if preview:
            title = f"{title} - preview for {preview['device']}"
        text, sections = join_sections(parts)
        if not sections:  # one kernel: still name it
            sections = [{"label": parts[0][0], "line": 0}]
        out[stage] = artifact(stage, compile_records.compile_id, title, language, text,
                              sections=sections)
        out[stage]["preview"] = preview["device"] if preview else None
    return out


def _key(meta: dict) -> tuple[str, bool]:
    return meta["name"], bool(meta.get("is_backward"))


def _graph(meta: dict, files: list[str], labels: list[str]) -> str | None:
    """forward / backward / inference: the output module the kernel was loaded from."""
    path = meta["launch"].get("module_file")
    if path in files:
        return labels[files.index(path)]
    return "backward" if meta.get("is_backward") else None


def annotate(kernels: list[dict], compile_records) -> None:
    """Give each Triton kernel of the compile its launch metadata, estimates and autotuning."""
    files = [os.path.abspath(r["meta"].get("file_path") or r["meta"].get("filename") or "")
             for r in compile_records.all("inductor_output_code")]
    labels = graph_labels(compile_records)
    launched = {(r["meta"]["name"], _graph(r["meta"], files, labels)): r["meta"]
                for r in compile_records.all("triton_kernel")}
    autotuned = {_key(r["meta"]): r["meta"]["configs"]
                 for r in compile_records.all("triton_autotune")}
    for kernel in kernels:
        info = launched.get((kernel["name"], kernel.get("graph"))) or launched.get(
            (kernel["name"], None))
        if kernel["kind"] == "triton" and info is not None:
            kernel.update(launch=info["launch"], num_gb=info.get("num_gb"),
                          flop=info.get("flop"), autotune=autotuned.get(_key(info), []))


def compile_fields(compile_records) -> dict:
    """`autotuning` (max-autotune template choices) and `gpu_preview` of one compile."""
    preview = compile_records.first("gpu_preview")
    if preview is not None:
        preview = {**preview["meta"], "kernels": [
            {k: v for k, v in kernel.items() if k != "stages"}
            for kernel in preview["meta"]["kernels"]]}
    return {"autotuning": [r["meta"] for r in compile_records.all("autotune_choices")],
            "gpu_preview": preview}
