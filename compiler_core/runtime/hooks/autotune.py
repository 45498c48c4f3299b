"""Which choices autotuning benchmarked (job process side).

Inductor's feedback-saver hook (`select_algorithm.add_feedback_saver`) receives the timings dict
`log_results` prints from (`AUTOTUNE mm(...)` on stderr); each call becomes an
`autotune_choices` record. On this CPU (AVX-512) `max-autotune` benchmarks a C++ GEMM template
against ATen for a `bmm`; on a GPU, Triton templates against cuBLAS.
"""

from __future__ import annotations

from ..session import CaptureSession
from . import attached


def record_autotune_choices(session: CaptureSession) -> None:
    """One `autotune_choices` record per op Inductor autotuned: every choice benchmarked with its
    time, fastest first (Inductor keeps the fastest, `AlgorithmSelectorCache.__call__`)."""
    from torch._inductor import select_algorithm

    def feedback(timings, name, input_nodes, *_):
        if not session.recording:
            return
        choices = sorted(timings.items(), key=lambda item: item[1])
        session.writer.emit("autotune_choices", session.compile_id(), None, op=name,
                            inputs=[str(list(node.get_size())) for node in input_nodes],
                            choices=[{"name": c.name, "description": getattr(c, "description", ""),
                                      "ms": ms} for c, ms in choices])

    select_algorithm.add_feedback_saver(feedback)


def attach(session: CaptureSession) -> None:
    """`autotune_choices` records: every choice Inductor's autotuning benchmarked."""
    attached(session, "autotuning", record_autotune_choices)
