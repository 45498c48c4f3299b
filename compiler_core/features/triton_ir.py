"""Stages `triton_glir`, `triton_ttir`, `triton_ttgir`, `triton_llir`, `triton_ptx`, `triton_sass`:
each Triton kernel's lowering, one section per kernel; and the launch metadata of the compile's
kernels. A stage holds the kernels Triton wrote it for: `glir` only Gluon kernels' (Triton 3.9
lowers a `@gluon.jit` kernel from its Gluon IR to TTGIR, with no TTIR), the others every kernel's.

Sources: `triton_kernel` records (kernels that ran on this job's GPU, see
`compiler_core.runtime.gpu.triton_kernels`), else the `gpu_preview` record (kernels compiled for a virtual GPU
on a CPU-only machine, see `compiler_core.runtime.gpu.preview`); such artifacts say so in their title and
in `preview`. `triton_autotune` records hold the configs benchmarked while the script ran
(`max-autotune` template choices: `runtime/hooks/autotune.py`).
"""

from __future__ import annotations

import os

from ..parsers import provenance
from ..parsers.common import artifact, join_sections
from .inductor import graph_labels, module_map
from .kernels import extract_kernels, label, preview_kernels
from .spec import LIST, TEXT, Feature, Part, Stage, record

# Kernels that ran on the job's GPU, or the GPU preview's, announce the first of these stages.
SPECS = tuple(
    Stage(f"triton_{suffix}", title, title, language,
          records=("triton_kernel", "gpu_preview") if suffix == "ttir" else ())
    for suffix, title, language in (("glir", "Gluon IR (GLIR)", "mlir"),
                                    ("ttir", "Triton IR (TTIR)", "mlir"),
                                    ("ttgir", "Triton GPU IR (TTGIR)", "mlir"),
                                    ("llir", "LLVM IR", "llvm"), ("ptx", "PTX", "ptx"),
                                    ("sass", "SASS", "sass")))


def _label(kernel: dict) -> str:
    return label(kernel["name"], "backward" if kernel.get("is_backward") else None)


def _kernels(compile_records) -> tuple[list[dict], dict | None, dict]:
    """The kernels that ran here, else the previewed ones with the preview's record; and the
    kernels' sources with their user lines, by label."""
    ran = [r["meta"] for r in compile_records.all("triton_kernel")]
    if ran:
        described = extract_kernels(compile_records)
        return ran, None, {k["label"]: k for k in described}
    preview = compile_records.first("gpu_preview")
    if not preview:
        return [], None, {}
    described = preview_kernels(preview["meta"], compile_records.user_file)
    return preview["meta"]["kernels"], preview["meta"], {k["label"]: k for k in described}


def lowerings(kernels: list[dict], described: dict) -> list[dict]:
    """{stage suffix: (per-line user lines, kernel_src keys)} of each kernel."""
    out = []
    for kernel in kernels:
        source = described.get(_label(kernel))
        out.append(provenance.lowering_lines({**kernel, "source": source["source"]},
                                             provenance.unpack(source), _label(kernel))
                   if source else {})
    return out


def extract(compile_records) -> dict:
    kernels, preview, described = _kernels(compile_records)
    mapped = lowerings(kernels, described)
    out = {}
    for spec in SPECS:
        stage, title, language = spec.name, spec.title, spec.language
        suffix = stage.removeprefix("triton_")
        present = [(k, m.get(suffix, ([], []))) for k, m in zip(kernels, mapped)
                   if k["stages"].get(suffix)]
        if not present:
            continue
        parts = [(_label(k), k["stages"][suffix]) for k, _ in present]
        if preview:
            title = f"{title} - preview for {preview['device']}"
        text, sections = join_sections(parts)
        out[stage] = artifact(stage, compile_records.compile_id, title, language, text,
                              sections=sections)
        provenance.attach(out[stage], provenance.place([m[0] for _, m in present], sections, []),
                          provenance.place([m[1] for _, m in present], sections, None))
        if not sections:  # one kernel: still name it
            out[stage]["sections"] = [{"label": parts[0][0], "line": 0}]
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


RECORD_ONLY = ("stages", "owners", "sass_lines")  # what the preview's stages were built from


def preview_fields(compile_records, meta: dict) -> dict:
    """The GPU preview as the page shows it: its kernels like a compile's (nodes, user lines of
    each source line) with their launch metadata, and its output module as an artifact."""
    described = {k["name"]: k for k in preview_kernels(meta, compile_records.user_file)}
    kernels = [{**described.get(k["name"], {}),
                **{key: v for key, v in k.items() if key not in RECORD_ONLY}}
               for k in meta["kernels"]]
    module = artifact("output_code", compile_records.compile_id,
                      f"Generated code - preview for {meta['device']}", "python",
                      meta["output_code"])
    stacks = (meta.get("provenance") or {}).get("stacks", {})
    per_line, keys = module_map(meta["output_code"], list(described.values()), stacks,
                                compile_records.user_file)
    provenance.attach(module, per_line, keys)
    return {**{k: v for k, v in meta.items() if k not in ("kernels", "provenance")},
            "kernels": kernels, "module": module}


def compile_fields(compile_records) -> dict:
    """`gpu_preview` of one compile (its autotuning: `runtime/hooks/autotune.py`)."""
    preview = compile_records.first("gpu_preview")
    return {"gpu_preview": preview_fields(compile_records, preview["meta"]) if preview else None}


def _with_lowerings(group, compiled: dict) -> None:
    annotate(compiled["kernels"], group)
    compiled.update(compile_fields(group))


FEATURE = Feature(
    "triton_ir",
    records=(record("triton_kernel", name=TEXT), record("triton_autotune", configs=LIST),
             record("gpu_preview")),
    stages=SPECS, extract=extract,
    compile_parts=(Part(None, _with_lowerings, name="triton"),))
