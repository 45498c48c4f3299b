"""AOTAutograd's runtime wrappers as a stage (issue 43 item 3): the source PyTorch generated for
the code around a compiled graph, as its structured trace logged it in a plain process (torch
2.15: one `aot_autograd_runtime_wrappers` artifact with `# <wrapper>` sections; before: one
artifact per wrapper), live and read back from a TORCH_TRACE log."""

from __future__ import annotations

import json

import pytest
import torch
from plain_trace import run_traced

from compiler_core import Options
from compiler_core.report.trace_log import trace_result

SCRIPT = """import torch

def f(x, buf):
    buf.add_(1)
    return x.sin() * 2, x.view(-1)  # the second output aliases the input

x = torch.randn(4, requires_grad=True)
out = torch.compile(f)(x, torch.zeros(4))
out[0].sum().backward()
"""
AGGREGATED = "aot_autograd_runtime_wrappers"
AGGREGATES = tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 15)


def logged_wrappers(logs: dict[str, str]) -> list[tuple[str, str]]:
    """(wrapper, source) of every runtime wrapper the log holds, in order: 2.15's aggregated
    artifacts split at their `# <wrapper>` headers, older torches' artifacts as they are."""
    found = []
    for text in logs.values():
        lines = text.split("\n")
        for number, line in enumerate(lines):
            if "{" not in line or '"artifact"' not in line:
                continue
            name = json.loads(line[line.index("{"):])["artifact"]["name"]
            payload = []
            for more in lines[number + 1:]:
                if not more.startswith("\t"):
                    break
                payload.append(more[1:])
            source = "\n".join(payload)
            if name == AGGREGATED:
                parts = ("\n\n" + source).split("\n\n# ")[1:]
                found += [tuple(part.split("\n", 1)) for part in parts]
            elif source.startswith("def ") and ("wrapper" in name or name.startswith(
                    ("backward_", "compiled_function_", "mutation_"))):
                found.append((name, source))
    return found


@pytest.fixture(scope="module")
def runs(worker, tmp_path_factory):
    """The script live in the engine, and in a plain process under TORCH_TRACE."""
    live = worker.run(SCRIPT, Options(device="cpu", measure=False, views=False),
                      user_file="wrappers.py")
    folder = tmp_path_factory.mktemp("torch_trace")
    script = folder / "wrappers.py"
    script.write_text(SCRIPT)
    return live, run_traced([str(script)], folder)[1]


def wrappers_stage(result) -> dict:
    [compile_] = result["compiles"]
    return compile_["stages"]["aot_runtime_wrappers"]


def test_each_wrapper_pytorch_logged_is_a_section_of_the_stage(runs):
    live, logs = runs
    logged = logged_wrappers(logs)
    names = [name for name, _ in logged]
    assert {"runtime_wrapper_orchestration", "output_alias_wrapper", "backward_prologue"} \
        <= set(names)
    stage = wrappers_stage(live)
    assert [s["label"] for s in stage["sections"]] == names
    lines = stage["text"].split("\n")
    for section, (name, source) in zip(stage["sections"], logged):
        assert lines[section["line"]] == f"# {name}"
        assert "\n".join(lines[section["line"] + 1:]).startswith(source.rstrip())
    assert live["error"] is None and not live["stage_errors"]


def test_the_note_says_how_this_torch_logs_them(runs):
    live, logs = runs
    aggregated = any(f'"name": "{AGGREGATED}"' in text for text in logs.values())
    assert aggregated == AGGREGATES
    note = wrappers_stage(live)["source_note"]
    assert ("one aggregated artifact" in note) == AGGREGATES, note


def test_a_log_of_the_same_script_shows_the_same_stage(runs):
    live, logs = runs
    assert wrappers_stage(trace_result(logs))["text"] == wrappers_stage(live)["text"]
