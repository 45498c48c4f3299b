"""Recompiles as first-class results: the user's line that recompiled, the reason in one line
from PyTorch's own text, the user's paths as the script's name, and the frame at its `def`; on
real torch (one run of SCRIPT, and the gallery's shape change), then the reason parser on any
text (Hypothesis)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings, strategies as st

from compiler_core import Options
from compiler_core.features.recompiles import SUMMARY_CHARS, Seen, one_line, user_paths
from compiler_core.parsers.callsite import resume_stack, traceback_frames
from compiler_core.parsers.names import user_expression

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
    # the call's own arguments: the call's line says where the value came from
    assert first["0/1"]["source_line"] is first["0/2"]["source_line"] is None
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


ITEM_AFTER_BREAK = '''import torch


def f(x):
    y = x.sin()
    s = y.sum().item()  # ITEM
    return y * s


cf = torch.compile(f, dynamic=False)
for step in range(4):
    cf(torch.randn(4))  # CALL
'''
MODULE_ATTRIBUTES = '''import torch


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.scale = 1

    def forward(self, x):
        return self.lin(x) * self.scale  # USE


m = Scaled()
cm = torch.compile(m)
cm(torch.randn(2, 4))
m.scale = 2
cm(torch.randn(2, 4))  # SCALE
m.lin.weight.requires_grad_(False)
cm(torch.randn(2, 4))  # GRAD
'''
# PyTorch's own account of a script's recompiles, in a plain process: one message of its
# `recompiles` log per recompile, listing the failed guard of each cache entry it tried.
REFERENCE = '''import json, logging, runpy, sys

import torch
import torch._dynamo.guards

messages = []
handler = logging.Handler()
handler.emit = lambda record: messages.append(record.getMessage())
torch._logging.set_logs(recompiles=True)
torch._dynamo.guards.recompiles_log.addHandler(handler)
runpy.run_path(sys.argv[1], run_name="__main__")
print(json.dumps(messages))
'''


def pytorch_recompiles(script: str, folder) -> list[str]:
    (folder / "script.py").write_text(script)
    (folder / "reference.py").write_text(REFERENCE)
    proc = subprocess.run([sys.executable, "reference.py", "script.py"], capture_output=True,
                          text=True, timeout=300, cwd=folder)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def item_after_break(worker, tmp_path_factory):
    result = worker.run(ITEM_AFTER_BREAK, Options(device="cpu", measure=False, views=False))
    assert result["error"] is None, result["error"]
    return result, pytorch_recompiles(ITEM_AFTER_BREAK, tmp_path_factory.mktemp("item"))


def test_one_entry_per_recompile_listing_each_entry_it_missed(item_after_break):
    """dynamic=False: each new value of the `.item()` recompiles the resume function, and
    each recompile states one failed guard per cache entry it tried (1, 2, 3)."""
    result, messages = item_after_break
    assert len(result["recompiles"]) == len(messages) == 3
    failed = [len(re.findall(r"\n    - \d+/\d+: ", message)) for message in messages]
    assert [len(r["misses"]) for r in result["recompiles"]] == failed == [1, 2, 3]
    assert [[m["previous"] for m in r["misses"]] for r in result["recompiles"]] == [
        ["1/0"], ["1/1", "1/0"], ["1/2", "1/1", "1/0"]]
    assert [r["compile_id"] for r in result["recompiles"]] == ["1/1", "1/2", "1/3"]


def test_a_recompiling_call_states_every_entry_it_missed(item_after_break):
    """The calls timeline's reason of a recompiling call lists each cache entry it missed, as
    PyTorch's log does (1, 2, 3 entries), not only the newest."""
    result, messages = item_after_break
    stated = [c["reason"] for c in result["calls"] if c["outcome"] == "recompile"]
    failed = [re.findall(r"\n    - (\d+/\d+): ", message) for message in messages]
    assert [re.findall(r"^(\d+/\d+): ", reason, re.M) for reason in stated] == failed == [
        ["1/0"], ["1/1", "1/0"], ["1/2", "1/1", "1/0"]]


def test_a_value_guarded_after_a_break_reads_as_the_users_expression(item_after_break):
    """The guard is on `___stack0`, the resume function's stack slot that holds what the call
    that broke returned: the user's `y.sum().item()` on line ITEM, a new float each call."""
    result, _ = item_after_break
    for recompile in result["recompiles"]:
        assert re.fullmatch(r"y\.sum\(\)\.item\(\) changed: -?[\d.]+ -> -?[\d.]+; "
                            r"recompiles on every new value", recompile["summary"]), recompile
        assert recompile["source_line"] == line_of(ITEM_AFTER_BREAK, "ITEM")
        assert recompile["line"] == line_of(ITEM_AFTER_BREAK, "CALL")
        assert recompile["reason"].startswith("___stack0 == ")  # PyTorch's text, kept whole
    assert "___stack0" not in " ".join(c["summary"] or "" for c in result["calls"])


def test_module_attributes_read_as_the_script_writes_them(worker):
    result = worker.run(MODULE_ATTRIBUTES, Options(device="cpu", measure=False, views=False))
    scale, grad = result["recompiles"]
    assert (scale["summary"], scale["line"]) == (
        "self.scale changed: 1 -> 2; recompiles on every new value",
        line_of(MODULE_ATTRIBUTES, "SCALE"))
    assert scale["source_line"] == line_of(MODULE_ATTRIBUTES, "USE")
    assert grad["summary"] == "self.lin.weight.requires_grad changed: True -> False"
    assert grad["line"] == line_of(MODULE_ATTRIBUTES, "GRAD")


@pytest.mark.parametrize("source,expression", [
    ("self._modules['lin']._parameters['weight']", "self.lin.weight"),
    ("self._modules['layers']._modules['0']._buffers['running_mean']",
     "self.layers[0].running_mean"),
    ("self._modules['heads']._modules['q-proj']", "self.heads['q-proj']"),
    ("___as_tensor(lr)", "lr"),
    ("x", "x"),
])
def test_dynamo_sources_read_as_python(source, expression):
    assert user_expression(source) == expression


def test_a_guard_on_part_of_a_stack_slot_reads_as_part_of_the_users_expression():
    seen = Seen(sources={"___stack0": ("torch.nonzero(x)", 6)})
    assert one_line("___stack0.size()[0] == 3  # ...", seen=seen) == \
        "torch.nonzero(x).size()[0] changed from 3"
    assert one_line("___stack01 == 3", seen=seen) == "___stack01 changed from 3"
    # no disassembly of the resume function (a TORCH_TRACE log): where the value was held
    assert one_line("___stack1 == 3", seen=Seen(held_at=6)) == \
        "___stack1 (a value held across the graph break at l.6) changed from 3"


@pytest.mark.parametrize("frame,expression", [
    ('    s = y.sum().item()  # ITEM\n        ^^^^^^^^^^^^^^^^^^^^^^', "y.sum().item()"),
    ('    log.warning("%f", y.sum().item())\n                      ^^^^^^^^^^^^^^^',
     "y.sum().item()"),
    ("    return Double.apply(x.sin()) + 1\n           ^^^^^^^^^^^^^^^^^^^^^^^^^",
     "Double.apply(x.sin())"),
    ('    log.warning("step")', 'log.warning("step")'),
])
def test_a_frame_names_the_call_that_starts_at_its_carets(frame, expression):
    """Dynamo's frames may carry no end column, so Python marks to the end of the line: the
    call that starts at the carets is what the frame ran."""
    (found,) = traceback_frames(f'  File "/job/main.py", line 6, in f\n{frame}\n')
    assert (found["name"], found["line"], found["expression"]) == ("f", 6, expression)


@pytest.mark.parametrize("reason,arguments,summary", [
    ("tensor 'x' stride mismatch at index 1. expected 1, actual 2", None,
     "x.stride()[1] changed: 1 -> 2"),
    ("tensor 'x' requires_grad mismatch. expected requires_grad=0", None,
     "x.requires_grad changed: False -> True"),
    ("tensor 'w' requires_grad mismatch. expected requires_grad=1. Guard failed on a parameter, "
     "consider using torch._dynamo.config.force_parameter_static_shapes = False", None,
     "w.requires_grad changed: True -> False"),
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
    "self._modules['" * 50_000 + "._parameters['a']" * 50_000,
    '  File "x", line 1, in f\n    ' + "(" * 100_000 + ")" * 100_000 + "\n    ^\n" * 1000,
    "LOAD_FAST 1 (___stack0)\n" * 50_000 + "JUMP_FORWARD 1 (to 9)\n" + "9 CALL 0\n" * 50_000,
])
def test_the_parser_is_linear_on_hostile_text(text):
    """In this thread's CPU seconds, which the cost is about (the worst case takes 0.06 s of CPU,
    1.6 s of wall time at load 10 on 2 cores)."""
    start = time.thread_time()
    one_line(text, {"k": "2"})
    user_paths(text, "/job/main.py")
    user_expression(text)
    traceback_frames(text)
    resume_stack(text)
    assert time.thread_time() - start < 0.5
