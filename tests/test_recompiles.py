"""Recompiles as first-class results: the user's line that recompiled, the reason in one line
from PyTorch's own text, the user's paths as the script's name, and the frame at its `def`; on
real torch (one run of SCRIPT, and the gallery's shape change), then the reason parser on any
text (Hypothesis)."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings, strategies as st

from compiler_core import Options
from compiler_core.features.recompiles import SUMMARY_CHARS, one_line, user_paths

SCRIPT = '''import torch


@torch.compile
def f(x, k):  # DEF
    return x * k


x = torch.ones(4)
f(x, 1)  # CALL first
f(x, 2)  # CALL k
f(x.double(), 2)  # CALL dtype
'''


def line_of(source: str, marker: str) -> int:
    return next(i for i, text in enumerate(source.split("\n"), 1) if f"# {marker}" in text)


@pytest.fixture(scope="module")
def result(worker):
    result = worker.run(SCRIPT, Options(device="cpu", measure=False, views=False),
                        user_file="main.py")
    assert result["error"] is None, result["error"]
    return result


def test_an_int_argument_that_changed_reads_old_and_new_value(result):
    first = {r["compile_id"]: r for r in reversed(result["recompiles"])}  # each one's first
    assert (first["0/1"]["summary"], first["0/1"]["line"]) == (
        "k changed: 1 -> 2", line_of(SCRIPT, "CALL k"))
    assert first["0/1"]["reason"].startswith("k == 1 ")  # PyTorch's text, kept whole
    assert (first["0/2"]["summary"], first["0/2"]["line"]) == (
        "x.dtype changed: Float -> Double", line_of(SCRIPT, "CALL dtype"))
    recompiled = [c for c in result["calls"] if c["outcome"] == "recompile"]
    assert [c["summary"] for c in recompiled] == ["k changed: 1 -> 2",
                                                  "x.dtype changed: Float -> Double"]


def test_the_user_s_paths_read_as_the_script_s_name(result):
    assert result["user_file"] == "/job/main.py"  # where the job ran it
    (k_change, *_) = result["recompiles"]
    assert "ob/main.py" in k_change["reason"]  # torch's shorten_filename cut "/job/main.py"
    assert "# main.py:6 in f" in k_change["detail"]
    assert 'File "main.py", line 6, in f' in k_change["detail"]
    shown = [r["detail"] for r in result["recompiles"]] + [c["reason"] or ""
                                                           for c in result["calls"]]
    assert not [text for text in shown if "/job/" in text or "ob/main.py" in text]


def test_a_decorated_function_s_frame_is_its_def_line(result):
    assert {(c["frame"]["name"], c["frame"]["line"]) for c in result["compiles"]} == {
        ("f", line_of(SCRIPT, "DEF"))}


def test_a_shape_change_reads_as_the_size_that_changed(gallery_results):
    example = gallery_results["recompile_on_shape_change"]
    (recompile,) = example["recompiles"]
    assert recompile["summary"] == "x.size()[0] changed: 8 -> 4"
    (call,) = [c for c in example["calls"] if c["outcome"] == "recompile"]
    assert recompile["line"] == call["line"]
    assert "tensor 'x' size mismatch at index 0. expected 8, actual 4" in recompile["reason"]


@pytest.mark.parametrize("reason,arguments,summary", [
    ("tensor 'x' stride mismatch at index 1. expected 1, actual 2", None,
     "x.stride()[1] changed: 1 -> 2"),
    ("tensor 'x' requires_grad mismatch. expected requires_grad=0", None,
     "x.requires_grad changed: False -> True"),
    ("___check_type_id(k, 94)  # k  # ob/main.py:6 in f", None, "k's type changed"),
    ("len(xs) == 3  # for x in xs  # ob/main.py:6 in f", {"k": "2"}, "len(xs) changed from 3"),
    ("2 <= x.size()[0]  # x * 2", None, "guard failed: 2 <= x.size()[0]"),
])
def test_other_checks_read_in_words(reason, arguments, summary):
    assert one_line(reason, arguments) == summary


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("tensor' sizemach.,xpd=_-:#/\n()[]L\"0123456789")) |
               st.characters(), max_size=3000),
       st.dictionaries(st.text(max_size=8), st.text(max_size=40), max_size=3))
def test_the_parser_never_raises_and_stays_one_bounded_line(reason, arguments):
    summary = one_line(reason, arguments)
    assert len(summary) <= SUMMARY_CHARS and "\n" not in summary


USER_FILE = "/job/main.py"
WORDS = ["/job/main.py", "ob/main.py", "main.py", "/x/job/main.py", "domain.py", "main.pyc",
         "main.py.txt", "f"]
SEPARATORS = [" ", '"', ":6 in f ", "\n  ", "# ", "("]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), max_size=40))
def test_user_paths_write_each_path_of_the_script_as_its_name(words):
    """Each word that is the script's path, or its end as torch cuts it, reads `main.py`;
    other paths and words stay as they are."""
    expected = "".join(("main.py" if USER_FILE.endswith(w) and w.endswith("main.py") else w) + sep
                       for w, sep in words)
    assert user_paths("".join(w + sep for w, sep in words), USER_FILE) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=2000), st.text(max_size=40))
def test_user_paths_never_raise_nor_grow(text, user_file):
    assert len(user_paths(text, user_file)) <= len(text)


@pytest.mark.parametrize("text", [
    "tensor '" + "' size mismatch" * 20_000,  # every check found, none with values
    "a" * 200_000 + "main.py",  # a long path-like word before the name
    "/main.py" * 30_000,  # the name again and again, each a path's end
    "k == " + "1" * 200_000,
])
def test_the_parser_is_linear_on_hostile_text(text):
    start = time.perf_counter()
    one_line(text, {"k": "2"})
    user_paths(text, "/job/main.py")
    assert time.perf_counter() - start < 0.5
