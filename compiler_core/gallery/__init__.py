"""Teaching gallery: short standalone torch.compile scripts, one lesson each.

Every ``NN_slug.py`` file in this folder is an ordinary Python program that the engine runs
as-is. Its module docstring's first line is the title and its next paragraph is one sentence
saying what it teaches. This module only reads the files (no torch import), so listing the
gallery is cheap.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

_GALLERY_DIR = Path(__file__).resolve().parent
_FILE_NAME = re.compile(r"^\d+_(?P<slug>\w+)\.py$")


@dataclass(frozen=True)
class Example:
    slug: str  # file stem without the NN_ prefix, e.g. "print_graph_break"
    title: str  # first line of the module docstring
    teaches: str  # the docstring's second paragraph, joined into one line
    source: str  # full text of the script
    path: str  # absolute path of the script


def _load(path: Path) -> Example:
    source = path.read_text(encoding="utf-8")
    doc = ast.get_docstring(ast.parse(source, filename=str(path)))
    if not doc:
        raise ValueError(f"gallery script {path.name} has no module docstring")
    paragraphs = [" ".join(p.split()) for p in doc.split("\n\n")]
    return Example(
        slug=_FILE_NAME.match(path.name)["slug"],
        title=paragraphs[0],
        teaches=paragraphs[1] if len(paragraphs) > 1 else "",
        source=source,
        path=str(path),
    )


def list_examples() -> list[Example]:
    """All gallery scripts, sorted by file name (so by their NN_ number)."""
    paths = sorted(_GALLERY_DIR.glob("*.py"), key=lambda p: p.name)
    return [_load(p) for p in paths if _FILE_NAME.match(p.name)]


def get_example(slug: str) -> Example:
    """The script with this slug; KeyError if there is none."""
    for example in list_examples():
        if example.slug == slug:
            return example
    raise KeyError(slug)
