"""The one artifact shape every stage emits, and the helpers that map text back to user lines.

An artifact is `{"stage", "compile_id", "title", "language", "text", "src_lines", "sections"}`:
`src_lines[i]` is the user's source line that output line `i` came from (or null), so that
highlighting, linking and diffs work the same for every stage (Compiler Explorer's lesson).
`sections` marks labelled parts of one text (forward / backward) as `{"label", "line"}`.
"""

from __future__ import annotations

import re
from functools import lru_cache

TEXTS_KEPT = 32  # texts whose line map is kept (`fx_src_lines`): a compile's stages and more
TRACEBACK_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')
AOT_ID = re.compile(r"# AOT ID: \['\d+_(?P<kind>\w+)'\]")


def artifact(stage: str, compile_id: str | None, title: str, language: str, text: str,
             src_lines: list[int | None] | None = None,
             sections: list[dict] | None = None) -> dict:
    lines = text.count("\n") + 1
    return {"stage": stage, "compile_id": compile_id, "title": title, "language": language,
            "text": text, "src_lines": src_lines or [None] * lines, "sections": sections or []}


def program_stages(specs, program_id: str, texts: dict[str, str], src_lines) -> dict:
    """The stages of a program beside the compiles (an ExportedProgram, a TorchScript function):
    an artifact per spec whose text was captured, its lines mapped by `src_lines(text)`."""
    return {spec.name: artifact(spec.name, program_id, spec.title, spec.language, text,
                                src_lines(text))
            for spec in specs if (text := texts.get(spec.name))}


def graph_label(code: str, index: int) -> str:
    """forward / backward / inference: an output module's `# AOT ID: ['0_forward']` header."""
    match = AOT_ID.search(code or "")
    return match["kind"] if match else f"graph {index}"


def graph_labels(compile_records) -> list[str]:
    """The label of each output module of a compile, in compile order."""
    return [graph_label(r["payload"], i)
            for i, r in enumerate(compile_records.all("inductor_output_code"))]


def is_int(value) -> bool:
    """An int and not a bool (a job's JSON may put `true` where a number belongs)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_user_file(path: str, user_file: str) -> bool:
    """PyTorch sometimes shortens paths from the left; a suffix match covers that."""
    return bool(path) and (path == user_file or user_file.endswith(path.lstrip(".")))


# torch 2.14's FX codegen prefixes a backward node's comment: `# Backward of forward node: File:`.
BACKWARD_PREFIX = "Backward of forward node: "


def _fx_file_start(line: str) -> int | None:
    """Where the path starts in the line's first `#  File: ` comment."""
    hash_at = line.find("#")
    while hash_at >= 0:
        start = hash_at + 1
        while start < len(line) and line[start].isspace():
            start += 1
        if line.startswith(BACKWARD_PREFIX, start):
            start += len(BACKWARD_PREFIX)
        if line.startswith("File: ", start):
            return start + len("File: ")
        hash_at = line.find("#", hash_at + 1)
    return None


def fx_file_comment(line: str) -> tuple[str, int] | None:
    """`(file, line)` of the `# File: /path/x.py:14 in f, code: ...` comment FX codegen writes
    above the nodes of each user line: the path ends at the first `:digits in `. String search,
    linear on any line (the regex `#\\s*File: (.+?):(\\d+) in ` was quadratic)."""
    start = _fx_file_start(line)
    colon = line.find(":", start + 1) if start is not None else -1
    while colon >= 0:
        end = colon + 1
        while end < len(line) and line[end].isdecimal():
            end += 1
        if end > colon + 1 and line.startswith(" in ", end):
            return line[start:colon], int(line[colon + 1:end][:9])
        colon = line.find(":", colon + 1)
    return None


def fx_src_lines(text: str, user_file: str) -> list[int | None]:
    """For FX code: each line inherits the user line of the `# File:` comment above it."""
    return list(_fx_src_lines(text, user_file))


@lru_cache(maxsize=TEXTS_KEPT)  # a recompile that Inductor's caches answer logs the same texts
def _fx_src_lines(text: str, user_file: str) -> tuple[int | None, ...]:
    current, out = None, []
    for line in text.split("\n"):
        found = fx_file_comment(line)
        if found:
            current = found[1] if is_user_file(found[0], user_file) else None
        elif not line.strip():
            current = None
        out.append(current)
    return tuple(out)


def user_lines(text: str, user_file: str) -> list[int]:
    """Every `File "...", line N` of the user's file in a traceback-like text, outermost first."""
    return [int(m["line"]) for m in TRACEBACK_FRAME.finditer(text)
            if is_user_file(m["file"], user_file)]


def last_user_line(text: str, user_file: str) -> int | None:
    """The innermost frame of the user's file in a traceback-like text."""
    lines = user_lines(text, user_file)
    return lines[-1] if lines else None


def join_sections(parts: list[tuple[str, str]]) -> tuple[str, list[dict]]:
    """Join labelled texts into one, with a banner per part when there is more than one."""
    if len(parts) == 1:
        return parts[0][1], []
    chunks, sections, line = [], [], 0
    for label, text in parts:
        chunk = f"# ===== {label} =====\n{text.rstrip()}\n"
        sections.append({"label": label, "line": line})
        line += chunk.count("\n") + 1
        chunks.append(chunk)
    return "\n".join(chunks), sections
