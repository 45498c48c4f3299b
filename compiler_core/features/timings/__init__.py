"""`timings`: what the job measured after the script ran (`result["timings"]`, the whole run's,
written by compiler_core/runtime/measure): eager vs compiled for every compiled callable."""

from __future__ import annotations

from .attribution import attribute
from ..spec import Feature, Part, Stage, record

SPECS = (Stage("timings", "Timings (measured)", "Measured after the script ran: every compiled "
               "callable, eager vs compiled (the whole run)", "json", records=("timing",),
               field="timings", option="measure", view="timings"),)


# What Inductor's cpp.enable_kernel_profile adds to C++ kernels: a RECORD_FUNCTION per kernel
# (older torch), or on torch 2.13 an RAIIAtenRecordFunctionHandle per kernel and the include of
# the profiling helpers; the note quotes the first found.
PROFILE_MARKERS = ("RECORD_FUNCTION", "RAIIAtenRecordFunctionHandle",
                   "#include <torch/csrc/inductor/aoti_runtime/utils.h>")


def note_kernel_profile(run) -> None:
    """Say so on the output code of the compiles whose kernels carry the profiling lines."""
    if run.first("kernel_profile") is None:
        return
    for compiled in run.compiles:
        stage = compiled["stages"].get("output_code")
        found = [m for m in PROFILE_MARKERS if stage and m in stage["text"]]
        if found:
            stage["source_note"] = (
                f"torchbolt turned on Inductor's cpp.enable_kernel_profile so that its timings "
                f"can time each kernel: `{found[0]}` in the kernels comes from it, and a plain "
                "torch.compile run has no such line")


def compiled_while_timing(meta: dict, compiles: list[dict]) -> list[str]:
    """The graphs the timed compiled call ran that no compile of the run holds: capture records
    every compile the script makes, so these were compiled while torchbolt timed the call, with
    capture paused (compiled autograd traces the backward again once gradients accumulate into
    the .grad that earlier calls left)."""
    known = {c.get("id") for c in compiles}
    return [i for i in meta.get("replayed") or [] if i not in known]


def unrecorded_note(ids: list[str]) -> str:
    graphs = ", ".join(ids)
    return (f"The timed compiled call ran {graphs}, compiled while timing: calling the callable "
            "again ran code its script's calls had not (compiled autograd, for one, traces the "
            "backward again once gradients accumulate into the .grad earlier calls left). "
            "Capture is paused while timing, so it is not among this run's compiles, and its "
            "kernels are not joined to the eager ops they replaced.")


def timing_entry(meta: dict, run) -> dict:
    """A timing record's entry (a copy: records are read again by later builds), with the graphs
    its call ran that the timing compiled itself (`compiled_while_timing`), and its kernel
    attribution (`attribution`) in place of the profiles' units it is made of."""
    entry = dict(meta)
    unrecorded = compiled_while_timing(meta, run.compiles)
    if unrecorded:
        entry.update(compiled_while_timing=unrecorded,
                     notes=[*meta.get("notes", []), unrecorded_note(unrecorded)])
    kernels = meta.get("kernels")
    if not isinstance(kernels, dict) or "units" not in kernels:
        return entry
    entry["kernels"] = {k: v for k, v in kernels.items() if k not in ("units", "units_s")}
    entry["attribution"] = attribute(meta, run.compiles)
    if unrecorded and "rows" in entry["attribution"]:
        entry["attribution"]["compiled_while_timing"] = unrecorded
    return entry


FEATURE = Feature(
    "timings", records=(record("timing"), record("kernel_profile")), stages=SPECS,
    attach=("runtime.measure:attach",),
    run_parts=(Part(None, note_kernel_profile, name="kernel_profile"),
               Part("timings", lambda run: [timing_entry(r["meta"], run) for r in run.all("timing")], [])))
