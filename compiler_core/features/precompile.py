"""Stage `precompile_source`: the standalone Python source `torch.compiler.precompile` generated,
as the script got it (torch 2.14: `precompile(fn, *inputs)` returns it; 2.15:
`precompile.capture(...)` writes it to its `artifact_path`), recorded by `runtime/programs.py`.

Each precompile is a compile of its own, `precompile-N` (torchbolt's name: PyTorch names none,
its lowering being no Dynamo frame). What the lowering logs (make_fx's graph through AOTAutograd
and Inductor: the AOT graphs, the post-grad graph, the output code) is recorded under that id, so
the compile shows them beside the source. The source inlines the output code's kernels and adds
the calling convention (`BACKEND`, parameter and input metadata) and the driver that runs it.
The source names no line of the script (no `# File:` comments), but the output module it inlines
is Inductor's own text: its lines copied there link to the script as the output code's do.

An imported `TORCH_TRACE` log has no such hook, but PyTorch writes the stack of each entry it
logs with no compile id: an entry whose stack runs through the precompile's lowering
(torch/_precompile.py calling `compile_to_python`, 2.14 and 2.15 alike) is put under
`precompile-N` too (`LoggedPrecompiles`), so a log shows the compiles a live run shows.

torch 2.13 and older have no `torch.compiler.precompile`; a script that calls it stops with
PyTorch's AttributeError, and the stage says in words why it is missing (`stage_errors`).
"""

from __future__ import annotations

import re

from ..parsers import provenance
from ..parsers.common import artifact
from .inductor import output_code_map
from .spec import TEXT, Feature, Part, Stage, record, step_error

STAGE = "precompile_source"
SPECS = (Stage(STAGE, "Precompiled source",
               "torch.compiler.precompile: the standalone generated source (python_code)",
               "python", records=("precompile_source",)),)
# What a script that uses the API raises where this torch lacks it, and why, in words.
MISSING = (
    ("module 'torch.compiler' has no attribute 'precompile'",
     "torch {torch} has no torch.compiler.precompile: it came in torch 2.14 (a function that "
     "returns the generated source) and is a module in 2.15 (capture, then load). Run the "
     "script in an environment with torch 2.14 or later to see this stage."),
    ("'_PrecompileApi' object has no attribute",
     "torch {torch}'s torch.compiler.precompile is a function, precompile(fn, *example_inputs), "
     "returning the generated source; capture() and load() from files came in torch 2.15."),
)


PRECOMPILE_FILE = re.compile(r"(^|[/\\])torch[/\\]_precompile\.py$")
AOT_GRAPHS = {"aot_inference_graph", "aot_joint_graph"}  # AOTAutograd makes one per lowering


def compile_name(index: int) -> str:
    """torchbolt's name of a script's `index`th precompile (PyTorch names none)."""
    return f"precompile-{index}"


class LoggedPrecompiles:
    """The precompiles of one log, named as a live run names them: an entry with no compile id
    whose stack runs through a precompile's lowering is that precompile's. The next precompile
    begins at another call in the script, or where AOTAutograd's graph comes again (the same
    line called twice in a row). `script` is the file of the first precompile's call (where a
    log has no Dynamo frame to name the script by)."""

    def __init__(self):
        self.count, self.call_site, self.has_aot_graph, self.script = 0, None, False, ""

    def compile_id(self, name: str, stack, filenames: dict[int, str]) -> str | None:
        call_site = lowering_call_site(stack, filenames)
        if call_site is None:
            return None
        if call_site != self.call_site or (name in AOT_GRAPHS and self.has_aot_graph):
            self.count, self.call_site, self.has_aot_graph = self.count + 1, call_site, False
            innermost = call_site[-1][0] if call_site else ""
            self.script = self.script or (innermost if isinstance(innermost, str) else "")
        self.has_aot_graph = self.has_aot_graph or name in AOT_GRAPHS
        return compile_name(self.count - 1)


def lowering_call_site(stack, filenames: dict[int, str]) -> tuple | None:
    """The frames (file, line) that called torch's precompile API, where a logged `stack` (its
    file names interned as ids) runs through its lowering; else None."""
    if not isinstance(stack, list):
        return None
    frames = [(filenames.get(f.get("filename"), f.get("filename")), f.get("line"), f.get("name"))
              for f in stack if isinstance(f, dict)]
    in_api = [i for i, (file, _, _) in enumerate(frames)
              if isinstance(file, str) and PRECOMPILE_FILE.search(file)]
    called = [name for _, _, name in frames[in_api[-1] + 1:in_api[-1] + 2]] if in_api else []
    if called != ["compile_to_python"]:
        return None
    return tuple(frame[:2] for frame in frames[:in_api[0]])


def extract(compile_records) -> dict:
    """The source, its lines mapped to the script where they are the output module's."""
    found = compile_records.first("precompile_source")
    if found is None or not found["payload"]:
        return {}
    spec, text = SPECS[0], found["payload"]
    made = artifact(STAGE, compile_records.compile_id, spec.title, spec.language, text)
    codes = [r["payload"] or "" for r in compile_records.all("inductor_output_code")]
    per_line, keys = copied_lines(text, codes, *output_code_map(compile_records, codes))
    return {STAGE: provenance.attach(made, per_line, keys)}


def copied_lines(text: str, codes: list[str], maps: list, keys: list) -> tuple:
    """Each line's user lines and kernel_src key, where it is a line of an output module (the
    source inlines each verbatim; one not found maps nothing)."""
    total = text.count("\n") + 1
    per_line, line_keys = [[] for _ in range(total)], [None] * total
    for code, code_map, code_keys in zip(codes, maps, keys):
        at = text.find(code) if code else -1
        if at < 0 or (at and text[at - 1] != "\n"):
            continue
        first = text.count("\n", 0, at)
        for line, (lines, key) in enumerate(zip(code_map, code_keys), start=first):
            per_line[line], line_keys[line] = lines, key
    return per_line, line_keys


def say_why_missing(run) -> None:
    """Where the script stopped on the API this torch lacks, why the stage is missing."""
    error = run.result.get("error") or {}
    if error.get("type") != "AttributeError":
        return
    torch_version = (run.result.get("environment") or {}).get("torch") or "?"
    for message, reason in MISSING:
        if message in (error.get("message") or ""):
            run.result["stage_errors"].append(step_error(
                None, STAGE, error["message"], stages=[STAGE],
                reason=reason.format(torch=torch_version)))


FEATURE = Feature("precompile", records=(record("precompile_source", True, api=TEXT),),
                  stages=SPECS, attach=("runtime.programs:attach",), extract=extract,
                  run_parts=(Part(None, say_why_missing, name="precompile"),))
