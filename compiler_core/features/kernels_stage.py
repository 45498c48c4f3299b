"""The Kernels stage (declared in features/kernels.py): one text of a compile's kernels, each
under a header with its nodes and user lines, and the list the page shows beside it (jump-to
line, the scheduler's fusion decisions as indexes into the compile's `fusion.decisions`, measured
time per call). With the GPU preview on, the
previewed Triton kernels and the CUDA-side module that launches them instead.

A run part, listed after the parts it reads: a compile's kernels, Triton preview and fusion, and
the run's timings and calls (which exist only once the run's measurements are in).
"""

from __future__ import annotations

from .kernels import SPECS
from .spec import Feature, Part

STAGE = SPECS[0]
NO_SOURCE = "(library call, no generated source)"


def _users(entry: dict, i: int) -> list[int]:
    """The user lines of line `i` (0-based) of a kernel's source or of an artifact."""
    first = entry.get("src_lines", [])[i] if i < len(entry.get("src_lines", [])) else None
    return [] if first is None else [first, *entry.get("src_more", {}).get(str(i), [])]


def _compiled_rows(entry) -> list[dict]:
    """The profiler's rows of a timing entry's compiled calls (the job wrote them: checked)."""
    kernels = entry.get("kernels") if isinstance(entry, dict) else None
    rows = kernels.get("compiled") if isinstance(kernels, dict) else None
    return [r for r in rows if isinstance(r, dict) and isinstance(r.get("name"), str)
            and isinstance(r.get("us_per_call"), (int, float))] if isinstance(rows, list) else []


def kernel_times(result: dict, compile_id: str) -> dict[str, dict]:
    """Kernel name -> {us, callable}: the time per call the profiler measured for it in the
    timings of the callables whose calls ran this compile (the first such callable's)."""
    callables = {c["callable"] for c in result["calls"]
                 if c["compile_id"] == compile_id or compile_id in (c.get("entries") or [])}
    times: dict[str, dict] = {}
    for entry in result["timings"]:
        if entry.get("callable") in callables:
            for row in _compiled_rows(entry):
                times.setdefault(row["name"], {"us": row["us_per_call"],
                                               "callable": entry.get("name")})
    return times


def fusion_of(fusion: dict | None, kernel: dict) -> dict:
    """The scheduler's decisions that concern one kernel, as indexes into the compile's
    `fusion.decisions` (not copies: a 2-layer encoder's would add 195 KB to its result): those
    that fused into it, and the refusals with one of their nodes in it (on the CPU both nodes
    can end in one C++ kernel)."""
    mine = [(i, d) for i, d in enumerate((fusion or {}).get("decisions", []))
            if d["graph"] == kernel.get("graph")]
    return {"fused": [i for i, d in mine if d["fused"] and d["kernel"] == kernel["name"]],
            "refused": [i for i, d in mine if not d["fused"] and kernel["name"] in d["kernels"]]}


class _Text:
    """The artifact's text as it is written, with its line maps."""

    def __init__(self):
        self.lines: list[str] = []
        self.src_lines: list[int | None] = []
        self.src_more: dict[str, list[int]] = {}
        self.kernel_src: list[str | None] = []

    def add(self, line: str, users: list[int], key: str | None = None) -> None:
        if len(users) > 1:
            self.src_more[str(len(self.lines))] = users[1:]
        self.lines.append(line)
        self.src_lines.append(users[0] if users else None)
        self.kernel_src.append(key)

    def add_kernel(self, kernel: dict, comment: str) -> None:
        """A header (name, kind, graph; nodes; user lines), the source, a blank line."""
        graph = f", {kernel['graph']}" if kernel.get("graph") else ""
        lines = kernel.get("lines") or []
        header = [f"{comment} ===== {kernel['name']} ({kernel['kind']}{graph}) =====",
                  f"{comment} nodes: {', '.join(kernel['nodes'])}" if kernel.get("nodes") else None,
                  f"{comment} user lines: {', '.join(map(str, lines))}" if lines else None]
        for line in filter(None, header):
            self.add(line, lines)
        source, label = kernel.get("source"), kernel.get("label") or kernel["name"]
        for i, line in enumerate((source or f"{comment} {NO_SOURCE}").split("\n")):
            self.add(line, _users(kernel, i) if source else lines,
                     f"{label}:{i + 1}" if source else None)
        self.add("", [])


def kernels_artifact(compiled: dict, result: dict) -> dict | None:
    """The Kernels stage of one compile; None when it has no kernels."""
    preview = compiled.get("gpu_preview")
    kernels = preview["kernels"] if preview and preview.get("kernels") else compiled["kernels"]
    if not kernels:
        return None
    all_cpp = all(k["kind"] in ("cpp", "extern", "fallback") for k in kernels)
    comment = "//" if all_cpp else "#"
    times = {} if preview else kernel_times(result, compiled["id"])
    text, listed = _Text(), []
    for kernel in kernels:
        listed.append({
            "name": kernel["name"], "label": kernel.get("label") or kernel["name"],
            "kind": kernel["kind"], "graph": kernel.get("graph"),
            "nodes": kernel.get("nodes") or [], "lines": kernel.get("lines") or [],
            "line": len(text.lines) + 1,  # of its header, 1-based
            "fusion": None if preview else fusion_of(compiled.get("fusion"), kernel),
            "time": times.get(kernel["name"])})
        text.add_kernel(kernel, comment)
    sections = [{"label": k["label"], "line": k["line"] - 1} for k in listed]
    title = STAGE.title
    if preview:
        title = f"{title} - preview for {preview['device']}"
        module = preview.get("module")
        if module:
            sections.append({"label": "CUDA-side module (preview)", "line": len(text.lines)})
            text.add(f"# ===== {module['title']} =====", [])
            keys = module.get("kernel_src") or []
            for i, line in enumerate(module["text"].split("\n")):
                text.add(line, _users(module, i), keys[i] if i < len(keys) else None)
    return {"stage": STAGE.name, "compile_id": compiled["id"],
            "language": "cpp" if all_cpp else "python", "title": title,
            "text": "\n".join(text.lines), "src_lines": text.src_lines, "src_more": text.src_more,
            "kernel_src": text.kernel_src, "sections": sections, "kernels": listed}


def add_kernel_stages(run) -> None:
    """Each compile's Kernels stage, from its kernels and the run's timings so far."""
    for compiled in run.compiles:
        made = kernels_artifact(compiled, run.result)
        if made is not None:
            compiled["stages"][STAGE.name] = made


FEATURE = Feature("kernels_stage", run_parts=(Part(None, add_kernel_stages, name="kernels stage"),))
