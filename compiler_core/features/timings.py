"""`timings`: what the job measured after the script ran (`result["timings"]`, the whole run's,
written by compiler_core/runtime/measure): eager vs compiled for every compiled callable."""

from __future__ import annotations

from .spec import Stage

SPECS = (Stage("timings", "Timings (measured)", "Measured after the script ran: every compiled "
               "callable, eager vs compiled (the whole run)", "json", records=("timing",),
               field="timings", option="measure"),)
