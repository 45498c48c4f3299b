"""Stage `precompile_source`: the standalone Python source `torch.compiler.precompile` generated,
as the script got it (torch 2.14: `precompile(fn, *inputs)` returns it; 2.15:
`precompile.capture(...)` writes it to its `artifact_path`), recorded by `runtime/programs.py`.

Each precompile is a compile of its own, `precompile-N` (torchbolt's name: PyTorch names none,
its lowering being no Dynamo frame). What the lowering logs (make_fx's graph through AOTAutograd
and Inductor: the AOT graphs, the post-grad graph, the output code) is recorded under that id, so
the compile shows them beside the source. The source inlines the output code's kernels and adds
the calling convention (`BACKEND`, parameter and input metadata) and the driver that runs it.

torch 2.13 and older have no `torch.compiler.precompile`; a script that calls it stops with
PyTorch's AttributeError, and the stage says in words why it is missing (`stage_errors`).
"""

from __future__ import annotations

from .spec import TEXT, Feature, Part, payload_stage, record, step_error

STAGE = "precompile_source"
SPECS = (payload_stage(STAGE, "Precompiled source",
                       "torch.compiler.precompile: the standalone generated source (python_code)",
                       "precompile_source", graph=False),)
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
                  stages=SPECS, attach=("runtime.programs:attach",),
                  run_parts=(Part(None, say_why_missing, name="precompile"),))
