"""Stage `aot_runtime_wrappers`: the code AOTAutograd runs around the compiled graph on every call
(the orchestration, the mutation epilogue, output aliases, dedup, the backward's prologue and
epilogue), as PyTorch generated and logged it.

torch 2.13 and 2.14 log one structured-trace artifact per generated wrapper, named for it;
torch 2.15 logs them in one `aot_autograd_runtime_wrappers` artifact, each under a `# <wrapper>`
header (`torch/_functorch/_aot_autograd/codegen.py`). The older artifacts are joined the way 2.15
joins them, so two versions' stages diff wrapper against wrapper; the note says how this torch
logged them. A torch that logs none (no wrapper generated as source) has no such stage.
"""

from __future__ import annotations

from ..parsers.common import artifact
from .spec import ARTIFACT, Feature, Stage, traced

AGGREGATED = "aot_autograd_runtime_wrappers"  # torch 2.15
# torch 2.13/2.14's artifact names, one per generated wrapper (2.15 heads its sections with them).
PER_WRAPPER = ("runtime_wrapper_orchestration", "mutation_epilogue", "output_alias_wrapper",
               "dedup_wrapper", "synthetic_base_wrapper", "effect_tokens_wrapper",
               "functionalized_rng_wrapper", "debug_assert_wrapper", "compiled_fn_wrapper",
               "compiled_function_forward", "compiled_function_backward", "backward_prologue",
               "backward_epilogue")
SPEC = Stage("aot_runtime_wrappers", "AOT runtime wrappers", "AOTAutograd runtime wrappers",
             "python", records=(AGGREGATED, *PER_WRAPPER))
NOTES = {AGGREGATED: "one aggregated artifact per compile, `# <wrapper>` sections (torch 2.15+)",
         "each": "one artifact per wrapper, joined here under `# <wrapper>` headers (torch 2.14 "
                 "and older)"}


def sections(text: str) -> list[dict]:
    """The `# <wrapper>` header lines: each a wrapper's source starts below its header."""
    return [{"label": line[2:], "line": number}
            for number, line in enumerate(text.split("\n"))
            if line.startswith("# ") and line[2:] in PER_WRAPPER]


def extract(compile_records) -> dict:
    aggregated = [r["payload"] for r in compile_records.all(AGGREGATED) if r.get("payload")]
    if aggregated:
        text, note = "\n\n".join(aggregated), NOTES[AGGREGATED]
    else:
        each = [r for r in compile_records.records if r["name"] in PER_WRAPPER
                and r.get("payload")]
        if not each:
            return {}
        # torch 2.15's own join (codegen._format_runtime_wrapper_sources), in logged order
        text = "\n\n".join(f"# {r['name']}\n{r['payload']}" for r in each)
        note = NOTES["each"]
    made = artifact(SPEC.name, compile_records.compile_id, SPEC.title, SPEC.language, text,
                    sections=sections(text))
    made["source_note"] = note
    return {SPEC.name: made}


FEATURE = Feature("wrappers", records=tuple(traced(name, ARTIFACT) for name in SPEC.records),
                  stages=(SPEC,), extract=extract)
