"""The guards reader splits a guards text into lines a block at a time (features/guards.py
`text_lines`): the lines, and so the guards read from them, are those of the text split whole."""

from __future__ import annotations

import json
import os

import pytest

from compiler_core.features import guards

HERE = os.path.dirname(__file__)
USER_FILE = "/work/main/compiler_core/gallery/01_print_graph_break.py"  # as in that run
with open(os.path.join(HERE, "data", "print_graph_break.records.jsonl"), encoding="utf-8") as fh:
    REAL = next(json.loads(line)["payload"] for line in fh
                if json.loads(line)["name"] == "dynamo_cpp_guards_str")


@pytest.mark.parametrize("block", [1, 2, 3, 64, 1 << 16])
@pytest.mark.parametrize("text", ["", "a", "\n", "a\n", "\na", "ab\ncd", "\n\n\n", REAL])
def test_the_lines_are_those_of_the_text_split_whole(monkeypatch, text, block):
    monkeypatch.setattr(guards, "BLOCK", block)
    assert list(guards.text_lines(text)) == text.split("\n")


def test_a_guards_text_read_in_small_blocks_gives_the_same_guards(monkeypatch):
    whole = guards.parse_guards(REAL.strip("\n"), USER_FILE)
    monkeypatch.setattr(guards, "BLOCK", 5)
    assert guards.parse_guards(REAL.strip("\n"), USER_FILE) == whole
    assert len(whole[0]) > 5 and len(whole[1]) == REAL.strip("\n").count("\n") + 1
