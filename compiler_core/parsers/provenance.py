"""Lowered stages traced back to the user's lines (pure): loop IR, the generated module, each
kernel's source, and its Triton lowering (TTIR, TTGIR, LLIR, PTX, SASS).

The chain, every link real data from the run:
- a Triton stage line -> a line of the kernel's source, by Triton's own location info (MLIR
  `loc(...)` in TTIR/TTGIR, `!DILocation` in LLIR, `.loc` in PTX, nvdisasm's line table for SASS),
  all in lines of the kernel's `.py` file, whose `def` line anchors them to `kernel["source"]`;
- a kernel source line -> the FX node(s) Inductor wrote it for (`kernel_lines` records, see
  `compiler_core.runtime.line_owners`); a line written outside any node (index set-up) belongs to
  the whole kernel: Inductor's provenance tracking gives the kernel's nodes and user lines;
- a node -> its user line (the node's `stack_trace`, as the FX stages show it).

A line mapping to several user lines maps to the first (`src_lines[i]`) and lists the others in
`src_more[str(i)]`. `kernel_src[i]` names the kernel source line a line of a kernel's lowering (or
of the kernel source itself) stands for, `"LABEL:N"`: panes link their lines through it.
"""

from __future__ import annotations

import re

Lines = list[int]  # the user lines one output line came from, first first


# ---------------------------------------------------------------- the artifact fields

def line_fields(per_line: list[Lines]) -> dict:
    """`src_lines` (each line's first user line) and `src_more` (the others, where any)."""
    return {"src_lines": [lines[0] if lines else None for lines in per_line],
            "src_more": {str(i): lines[1:] for i, lines in enumerate(per_line) if len(lines) > 1}}


def unpack(fields: dict) -> list[Lines]:
    """The per-line user lines that `line_fields` packed."""
    more = fields.get("src_more") or {}
    return [[first, *more.get(str(i), [])] if first is not None else []
            for i, first in enumerate(fields["src_lines"])]


def attach(artifact: dict, per_line: list[Lines], keys: list[str | None] | None = None) -> dict:
    """Set an artifact's `src_lines`, `src_more` and (where any) `kernel_src` from per-line
    values, fitted to its text's lines."""
    total = len(artifact["src_lines"])
    artifact.update(line_fields((per_line + [[]] * total)[:total]))
    if keys is not None and any(keys):
        artifact["kernel_src"] = (keys + [None] * total)[:total]
    return artifact


def ordered(lines) -> Lines:
    return sorted({line for line in lines if line is not None})


def place(parts: list[list], sections: list[dict], blank) -> list:
    """Per-line values of texts joined by `common.join_sections`, from each part's values."""
    if not sections:
        return list(parts[0]) if parts else []
    out: list = []
    for values, section in zip(parts, sections):  # a part's values stop where the next starts
        out = (out + [blank] * section["line"])[:section["line"] + 1] + list(values)
    return out


# ---------------------------------------------------------------- kernel sources

DEF_LINE = re.compile(r'^(def \w+\(|extern "C")')


def def_index(source: str) -> int | None:
    """0-based line of the kernel function's definition in a kernel source."""
    return next((i for i, line in enumerate(source.split("\n")) if DEF_LINE.match(line)), None)


def source_lines(source: str, owners: dict, whole: Lines) -> list[Lines]:
    """Each line of a kernel source: the user lines of the nodes it was written for, else (a
    line of the function not written for any node) the whole kernel's."""
    start = def_index(source) or 0
    out = []
    for index, line in enumerate(source.split("\n")):
        text = line.strip()
        if text in owners:
            out.append(ordered(line for _, line in owners[text]) or whole)
        else:
            out.append(whole if index >= start and text else [])
    return out


# ---------------------------------------------------------------- Triton location info

MLIR_LOC_DEF = re.compile(r"^#(?P<id>loc\d*) = loc\((?P<body>.*)\)\s*$")
MLIR_OP_LOC = re.compile(r"loc\((?P<body>[^()]*(?:\([^()]*\)[^()]*)*)\)\s*$")
FILE_LOC = re.compile(r'^"(?P<file>[^"]+)":(?P<line>\d+):\d+')
NAMED_LOC = re.compile(r'^"[^"]*"\((?P<inner>.*)\)$')
CALLSITE = re.compile(r"^callsite\((?P<callee>\S+) at (?P<caller>\S+)\)$")
FUSED = re.compile(r"^fused(?:<[^>]*>)?\[(?P<items>.*)\]$")


class MlirLocations:
    """Resolves an MLIR op's `loc(...)` to a line of the kernel file (the file of `#loc`, the
    function's own location); a callsite into Triton's library resolves to its caller."""

    def __init__(self, text: str):
        self.defs = {m["id"]: m["body"] for line in text.split("\n")
                     if (m := MLIR_LOC_DEF.match(line))}
        func = FILE_LOC.match(self.defs.get("loc", ""))
        self.file, self.def_line = (func["file"], int(func["line"])) if func else (None, None)

    def line(self, body: str, depth: int = 0) -> int | None:
        body = body.strip()
        if depth > 50 or not body:
            return None
        if body.startswith("#"):
            return self.line(self.defs.get(body[1:], ""), depth + 1)
        if (m := FILE_LOC.match(body)):
            return int(m["line"]) if m["file"] == self.file else None
        if (m := NAMED_LOC.match(body)):
            return self.line(m["inner"], depth + 1)
        if (m := CALLSITE.match(body)):
            return self.line(m["callee"], depth + 1) or self.line(m["caller"], depth + 1)
        if (m := FUSED.match(body)):
            return next(filter(None, (self.line(item, depth + 1)
                                      for item in m["items"].split(","))), None)
        return None


def mlir_file_lines(text: str) -> tuple[list[int | None], str | None, int | None]:
    """TTIR / TTGIR: the kernel file line of each op line; the kernel file and its def line."""
    locations = MlirLocations(text)
    out = []
    for line in text.split("\n"):
        match = None if line.startswith("#") else MLIR_OP_LOC.search(line)
        out.append(locations.line(match["body"]) if match else None)
    return out, locations.file, locations.def_line


LLVM_LOCATION = re.compile(r"^!(?P<id>\d+) = !DILocation\(line: (?P<line>\d+)[^)]*?"
                           r"scope: !(?P<scope>\d+)(?:, inlinedAt: !(?P<at>\d+))?")
LLVM_SCOPE_FILE = re.compile(r"^!(?P<id>\d+) = (?:distinct )?!DI\w+\(.*?file: !(?P<file>\d+)")
LLVM_FILE = re.compile(r'^!(?P<id>\d+) = !DIFile\(filename: "(?P<name>[^"]*)", '
                       r'directory: "(?P<dir>[^"]*)"')
LLVM_DBG = re.compile(r"!dbg !(?P<id>\d+)")


def _joined(directory: str, name: str) -> str:
    return name if name.startswith("/") else f"{directory.rstrip('/')}/{name}"


def llir_file_lines(text: str, kernel_file: str) -> list[int | None]:
    """LLVM IR: each instruction's `!dbg` location, followed through `inlinedAt` to the kernel
    file."""
    lines = text.split("\n")
    files = {m["id"]: _joined(m["dir"], m["name"]) for l in lines if (m := LLVM_FILE.match(l))}
    scope_file = {m["id"]: files.get(m["file"]) for l in lines
                  if (m := LLVM_SCOPE_FILE.match(l))}
    locations = {m["id"]: m for l in lines if (m := LLVM_LOCATION.match(l))}

    def resolve(ref: str, depth: int = 0) -> int | None:
        location = locations.get(ref)
        if location is None or depth > 50:
            return None
        if scope_file.get(location["scope"]) == kernel_file:
            return int(location["line"])
        return resolve(location["at"], depth + 1) if location["at"] else None

    return [resolve(m["id"]) if not line.startswith("!") and (m := LLVM_DBG.search(line))
            else None for line in lines]


PTX_FILE = re.compile(r'^\s*\.file\s+(?P<id>\d+)\s+"(?P<path>[^"]+)"')
PTX_LOC = re.compile(r"^\s*\.loc\s+(?P<file>\d+)\s+(?P<line>\d+)\s+\d+"
                     r"(?:.*inlined_at\s+(?P<at_file>\d+)\s+(?P<at_line>\d+))?")


def ptx_file_lines(text: str, kernel_file: str) -> list[int | None]:
    """PTX: each line after a `.loc` (to the next, or the function's end) has its line."""
    lines = text.split("\n")
    kernel_ids = {m["id"] for l in lines if (m := PTX_FILE.match(l)) and m["path"] == kernel_file}
    out, current = [], None
    for line in lines:
        if (m := PTX_LOC.match(line)):
            current = (int(m["line"]) if m["file"] in kernel_ids else
                       int(m["at_line"]) if m["at_file"] in kernel_ids else None)
        elif line.startswith("}"):
            current = None
        out.append(current if line.strip() else None)
    return out


# ---------------------------------------------------------------- one kernel's lowering

TRITON_STAGES = ("ttir", "ttgir", "llir", "ptx", "sass")


def stage_file_lines(suffix: str, text: str, kernel: dict, kernel_file: str | None):
    if suffix in ("ttir", "ttgir"):
        return mlir_file_lines(text)[0]
    if kernel_file is None:
        return []
    if suffix == "llir":
        return llir_file_lines(text, kernel_file)
    if suffix == "ptx":
        return ptx_file_lines(text, kernel_file)
    if suffix == "sass":  # nvdisasm's line table, read in the job (`triton_kernels`)
        return kernel.get("sass_lines") or []
    return []


def lowering_lines(kernel: dict, source_map: list[Lines], label: str) -> dict:
    """{stage suffix: (per-line user lines, per-line kernel_src keys)} of one Triton kernel."""
    stages = kernel.get("stages") or {}
    _, kernel_file, def_line = mlir_file_lines(stages.get("ttir", ""))
    start = def_index(kernel.get("source") or "")
    out = {}
    for suffix in TRITON_STAGES:
        text = stages.get(suffix)
        if not text:
            continue
        file_lines = stage_file_lines(suffix, text, kernel, kernel_file)
        per_line, keys = [], []
        for file_line in file_lines:
            index = (None if file_line is None or def_line is None or start is None
                     else file_line - def_line + start)
            inside = index is not None and 0 <= index < len(source_map)
            per_line.append(source_map[index] if inside else [])
            keys.append(f"{label}:{index + 1}" if inside else None)
        out[suffix] = (per_line, keys)
    return out


# ---------------------------------------------------------------- loop IR

IR_OP = re.compile(r"^(?:class )?(?P<op>op\d+(?:_op\d+)*)(?:[:.]|_loop_body)")


def ir_lines(text: str, ops: dict) -> list[Lines]:
    """Loop IR: each line of an op's dump has the user lines of the op's origin nodes."""
    out, current = [], []
    for line in text.split("\n"):
        if (m := IR_OP.match(line)):
            current = ordered(user for _, user in ops.get(m["op"], []))
        elif line and not line[0].isspace() and "_layout = " not in line:
            current = []
        out.append(current if line.strip() else [])
    return out


# ---------------------------------------------------------------- the generated module

# `NAME = async_compile.triton(...` in a Python module; in AOTInductor's C++ wrapper on CUDA the
# same call, indented, inside the comment above each kernel's launcher (torch 2.11).
KERNEL_DEFINITION = re.compile(r"^(?:(?P<name>\w+) = async_compile\.\w+\(|"
                               r" *async_compile\.triton\('(?P<embedded>\w+)',)")
HANDLE = re.compile(r"(?:#|//) \[Provenance debug handles\] (?P<keys>.+)$")
COMMENT = ("#", "//")  # Python's, and the C++ wrapper's


def module_lines(code: str, kernels: dict[str, dict], stack_lines: dict[str, Lines]) -> tuple:
    """The generated module (or AOTInductor's C++ wrapper): kernel definitions line by line
    (and the comments above them), and in `call()` (`run_impl`) each launch, from the
    provenance handle comment above it to the line that calls the kernel. `kernels`: name ->
    {"map": per source line, "lines": whole kernel, "label"}; `stack_lines`: provenance key
    (`NAME:N`) -> its user lines."""
    lines = code.split("\n")
    per_line: list[Lines] = [[] for _ in lines]
    keys: list[str | None] = [None] * len(lines)
    index = 0
    while index < len(lines):
        line = lines[index]
        definition = KERNEL_DEFINITION.match(line)
        handle = HANDLE.search(line)
        name = definition and (definition["name"] or definition["embedded"])
        if name in kernels:
            index = _definition(lines, index, kernels[name], per_line, keys)
        elif handle:
            index = _launch(lines, index, handle["keys"].split(), stack_lines, per_line)
        index += 1
    return per_line, keys


def _comments_above(lines: list[str], index: int) -> range:
    start = index
    while start > 0 and lines[start - 1].lstrip().startswith(COMMENT):
        start -= 1
    return range(start, index)


def _definition(lines, index, kernel, per_line, keys) -> int:
    for above in _comments_above(lines, index):
        per_line[above] = kernel["lines"]
    per_line[index] = kernel["lines"]
    body = index + 1  # the source starts on the line after the opening quotes
    for offset, mapped in enumerate(kernel["map"]):
        if body + offset < len(lines):
            per_line[body + offset] = mapped
            keys[body + offset] = f"{kernel['label']}:{offset + 1}"
    return body + len(kernel["map"])


def _launch(lines, index, handle_keys, stack_lines, per_line) -> int:
    user = ordered(line for key in handle_keys for line in stack_lines.get(key, []))
    names = [key.rsplit(":", 1)[0] for key in handle_keys]
    for above in [*_comments_above(lines, index), index]:
        per_line[above] = user
    end = index + 1
    while end < len(lines) and lines[end].strip() and not any(n in lines[end] for n in names):
        end += 1
    for line in range(index + 1, min(end + 1, len(lines))):
        per_line[line] = user
    return end
