"""Stages of `torch.export.export` (the AOT path), one entry per ExportedProgram the script made:
`result["exports"] = [{"id", "line", "stages": {stage: artifact}, "aoti"?}]`.

`exported_program` is the program as PyTorch prints it: the ATen graph with its signature
(`# File:` comments link nodes to user lines), the graph signature and the range constraints;
`export_core_aten` is that program after `run_decompositions()` (Core ATen).

An export with an AOTInductor package (built by the script, or by torchbolt with the `aot`
option: `runtime/aoti.py`) also has `aoti` (who built it, the C++ compiler, the package's files,
the measured build, load and first-call seconds beside a fresh torch.compile's first call) and
two stages: `aoti_wrapper`, the generated C++ wrapper, whose launches map to user lines through
Inductor's provenance handles as the output code's do; `aoti_kernels`, the kernels (the
package's kernel.cpp on the CPU; on CUDA the Triton kernels the wrapper carries as comments),
line by line through the capture's line owners.
"""

from __future__ import annotations

import json
import textwrap

from ..parsers import provenance
from ..parsers.common import artifact, fx_src_lines, join_sections, program_stages
from .inductor import module_map
from .kernels import describe
from .spec import OBJECT, Feature, Part, Stage, record

SPECS = (
    Stage("exported_program", "Exported program (torch.export)",
          "torch.export: ExportedProgram (graph, graph signature, range constraints)", "python",
          field="exports"),
    Stage("export_core_aten", "Exported program, Core ATen",
          "torch.export: ExportedProgram.run_decompositions() (Core ATen)", "python",
          field="exports"),
    Stage("aoti_wrapper", "AOTInductor wrapper (C++)",
          "AOTInductor: the package's generated C++ wrapper (wrapper.cpp)", "cpp",
          field="exports", panel="aoti"),
    Stage("aoti_kernels", "AOTInductor kernels",
          "AOTInductor: the package's kernels (kernel.cpp; on CUDA the Triton kernels the "
          "wrapper carries)", "cpp", field="exports", panel="aoti"),
)
SPEC = {spec.name: spec for spec in SPECS}
PACKAGE_FILES = 500  # files of one package listed (runtime/aoti.py records no more)
TIMINGS = ("load_s", "first_call_s", "jit_first_call_s")


def programs(run) -> list[dict]:
    """One entry per `export` record of the run (`report.result.RunRecords`)."""
    out = []
    for record in run.all("export"):
        meta = record["meta"]
        pid = f"export-{meta['index']}"
        out.append({"id": pid, "line": meta["line"], "stages": program_stages(
            SPECS, pid, meta["stages"], lambda text: fx_src_lines(text, run.user_file))})
    return out


def attach_aoti(run) -> None:
    """Each export's AOTInductor package (`aoti`) and its two stages, from the job's
    `aoti_package` and `aoti_timing` records (in place, on the run's `exports`)."""
    by_id = {entry["id"]: entry for entry in run.result["exports"]}
    timings = {r["meta"].get("export"): r["meta"] for r in run.all("aoti_timing")}
    for record in run.all("aoti_package"):
        meta = record["meta"]
        entry = by_id.get(f"export-{meta.get('export')}")
        if entry is None:
            continue
        entry["stages"].update(aoti_stages(entry["id"], meta, run.user_file))
        timing = timings.get(meta["export"], {})
        entry["aoti"] = {"built_by": meta["built_by"], "line": meta["line"],
                         "device": meta["device"], "compiler": meta["compiler"],
                         "configs": meta["configs"],
                         "compile_s": meta["compile_s"],
                         "package_files": list(meta["files"])[:PACKAGE_FILES],
                         **{name: timing.get(name) for name in TIMINGS}}


def cpp_kernels(code: str) -> list[dict]:
    """The C++ kernels of a kernel.cpp: each from its `extern "C"` line to the `}` ending it,
    `at` its first line."""
    lines, out, start = code.split("\n"), [], None
    for index, line in enumerate(lines):
        if line.startswith('extern "C"'):
            start = index
        elif line == "}" and start is not None:
            name = lines[start].split("(", 1)[0].split()[-1]
            out.append({"name": name, "kind": "cpp", "at": start,
                        "source": "\n".join(lines[start:index + 1])})
            start = None
    return out


def embedded_triton(wrapper: str) -> list[dict]:
    """The Triton kernels a CUDA wrapper carries in comments, each as the
    `async_compile.triton('NAME', '''...''')` call of a Python output module (dedented)."""
    lines, out, index = wrapper.split("\n"), [], 0
    while index < len(lines):
        found = provenance.KERNEL_DEFINITION.match(lines[index])
        if found and found["embedded"]:
            end = next((j for j in range(index + 1, len(lines))
                        if lines[j].lstrip().startswith("'''")), len(lines))
            source = textwrap.dedent("\n".join(lines[index + 1:end])).strip("\n")
            out.append({"name": found["embedded"], "kind": "triton", "source": source})
            index = end
        index += 1
    return out


def _kernel_part(text: str, kernels: list[dict]) -> tuple[list, list]:
    """Per line of a kernels text: user lines and kernel_src keys (`LABEL:N`), from each
    kernel's own map, placed where the kernel starts (`at`)."""
    total = text.count("\n") + 1
    per_line, keys = [[] for _ in range(total)], [None] * total
    for kernel in kernels:
        for offset, lines in enumerate(provenance.unpack(kernel)):
            if kernel["at"] + offset < total:
                per_line[kernel["at"] + offset] = lines
                keys[kernel["at"] + offset] = f"{kernel['label']}:{offset + 1}"
    return per_line, keys


def _stacked(kernels: list[dict]) -> tuple[str, list[dict]]:
    """The Triton kernels as one text, a blank line between them (`at` set)."""
    line = 0
    for kernel in kernels:
        kernel["at"] = line
        line += kernel["source"].count("\n") + 2
    return "\n\n".join(k["source"] for k in kernels), kernels


def aoti_stages(pid: str, meta: dict, user_file: str) -> dict:
    code, recorded = meta.get("code") or {}, meta.get("provenance") or {}
    mapping, stacks = (json.loads(recorded[key]) if recorded.get(key) else {}
                       for key in ("node_mappings", "stacks"))
    owners = meta.get("kernel_lines") or {}
    wrapper, kernel_code = code.get("wrapper") or "", code.get("kernels") or ""

    def described(found):
        return [describe(k, "aoti", mapping, stacks, owners, user_file) for k in found]

    cpp, triton = described(cpp_kernels(kernel_code)), described(embedded_triton(wrapper))
    out = {}
    if wrapper:
        spec = SPEC["aoti_wrapper"]
        out[spec.name] = provenance.attach(
            artifact(spec.name, pid, spec.title, spec.language, wrapper),
            *module_map(wrapper, cpp + triton, stacks, user_file))
    parts = [(label, text, kernels) for label, (text, kernels) in (
        ("C++ kernels (kernel.cpp)", (kernel_code, cpp)),
        ("Triton kernels (in wrapper.cpp)", _stacked(triton))) if kernels]
    if parts:
        spec = SPEC["aoti_kernels"]
        text, sections = join_sections([(label, part) for label, part, _ in parts])
        maps = [_kernel_part(part, kernels) for _, part, kernels in parts]
        out[spec.name] = provenance.attach(
            artifact(spec.name, pid, spec.title, "cpp" if cpp else "python", text,
                     sections=sections),
            provenance.place([m[0] for m in maps], sections, []),
            provenance.place([m[1] for m in maps], sections, None))
    return out


FEATURE = Feature(
    "export", records=(record("export", stages=OBJECT), record("aoti_package"),
                       record("aoti_timing")),
    stages=SPECS, attach=("runtime.programs:attach", "runtime.aoti:attach"),
    run_parts=(Part("exports", programs, []), Part(None, attach_aoti, name="aoti")))
