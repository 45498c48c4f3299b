"""Where depyf cannot decompile a frame (issue 43 item 4: depyf 0.20 has no handlers for the
Python 3.13+ opcodes CALL_KW, LOAD_FAST_LOAD_FAST, LOAD_FAST_BORROW), the bytecode stage says so
with the decompiler's own error and keeps the `dis` listing. The failure is forced as a newer
Python meets it: the script takes depyf's handler of an opcode its function uses away."""

from __future__ import annotations

import pytest

from compiler_core import Options

SCRIPT = """import torch
from depyf.decompiler import Decompiler

del Decompiler.BINARY_OP  # depyf now lacks this opcode's handler, as 0.20 lacks 3.13's CALL_KW

def scale(x):
    return x * 2 + 1

torch.compile(scale)(torch.randn(4))
"""


@pytest.fixture(scope="module")
def stages(worker):
    result = worker.run(SCRIPT, Options(device="cpu", measure=False, views=False),
                        user_file="decompile.py")
    assert result["error"] is None, result["error"]
    [compile_] = result["compiles"]
    return compile_["stages"]


def test_the_pane_says_why_there_is_no_source_and_keeps_the_dis_listing(stages):
    original = stages["bytecode_original"]
    assert original["source"] is None
    assert "depyf" in original["source_note"]
    assert "Unsupported instruction: BINARY_OP" in original["source_note"]
    assert "BINARY_OP" in original["text"] and "LOAD_FAST" in original["text"]


def test_a_frame_without_that_opcode_still_decompiles(stages):
    transformed = stages["bytecode_transformed"]
    if "BINARY_OP" in transformed["text"]:
        pytest.skip("this torch's transformed bytecode uses the opcode too")
    assert transformed["source"] and transformed["source_note"] is None
