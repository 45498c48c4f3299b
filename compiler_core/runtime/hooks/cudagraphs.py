"""Why CUDA graphs were skipped or recorded again (job process side).

Inductor states its decisions on the `cudagraphs` logging artifact (loggers
`torch._inductor.{cudagraph_trees,cudagraph_utils,scheduler}.__cudagraphs`, torch 2.13):
"skipping cudagraphs due to ..." (warning, through `log_cudagraph_skip_and_bump_counter`, the
function that also bumps `counters["inductor"]["cudagraph_skips"]`), "[0/0] Recording
cudagraph tree for ...", "[0/0] Re-recording function=..., reason=..." (debug), the graph
partitions (debug). Each line becomes a `cudagraph_log` record, tagged with the compile being
compiled and whether CUDA graphs were on (`config.triton.cudagraphs`, which the mode turns on
for the compile: the scheduler logs its partitions with them off too). At run time, outside any
compile, it is tagged with the compile id and name of the function the CUDA graph tree manager
is running (a skip for a mutated input is logged there, naming neither) and the user's line
that called it. To get the debug lines the
loggers are set to DEBUG; what a plain run prints (warnings, by torch's default levels) is
still handed on to torch's own handlers, nothing more. On a CPU-only graph Inductor counts a
skip but logs nothing. With DEBUG on, `CUDAGraphTreeManager._run` builds each re-record's
reason with `log_data_ptr_mismatch`, which asserts one input per placeholder: a graph
partition's function breaks that (torch 2.11 on the H200: the script died with "length
mismatch between inputs, recorded_data_ptr, and placeholders" when a weight was replaced), so
where it fails the reason is PyTorch's name of the mismatch alone.
"""

from __future__ import annotations

import functools
import logging
import sys

from ..session import CaptureSession
from . import attached

CUDAGRAPH_LOGGERS = tuple(f"torch._inductor.{module}.__cudagraphs"
                          for module in ("cudagraph_trees", "cudagraph_utils", "scheduler"))
MESSAGE_CHARS = 4000  # one log line (a skip reason carries a stack trace)
CUDAGRAPH_LINES = 2000  # per job: partition logs write a line per non-cudagraphable node


class CudagraphLogHandler(logging.Handler):
    """Records each line of the `cudagraphs` artifact and hands on what torch would print.
    `running`: (compile id, name) of each function the tree manager is running, innermost last."""

    def __init__(self, session: CaptureSession):
        super().__init__(logging.DEBUG)
        self.session, self.count = session, 0
        self.running: list[tuple[str | None, str | None]] = []

    def emit(self, record: logging.LogRecord) -> None:
        logger = logging.getLogger(record.name)
        if logger.parent is not None and record.levelno >= logger.parent.getEffectiveLevel():
            logger.parent.handle(record)  # as it propagated before: a plain run's stderr
        if not self.session.recording or self.count >= CUDAGRAPH_LINES:
            return
        self.count += 1
        compile_id, function, line = self.session.compile_id(), None, None
        if compile_id is None:  # at run time
            compile_id, function = self.running[-1] if self.running else (None, None)
            line = calling_line(self.session.user_file)
        self.session.writer.emit("cudagraph_log", compile_id, None,
                                 level=record.levelname, logger=record.name,
                                 message=record.getMessage()[:MESSAGE_CHARS], function=function,
                                 line=line, cudagraphs=cudagraphs_on())


def cudagraphs_on() -> bool:
    from torch._inductor import config
    return bool(config.triton.cudagraphs)


def calling_line(user_file: str) -> int | None:
    """The line of the user's script that is running: its innermost frame that is not code
    Dynamo made (a compiled function's frame stands at its def or break line; Dynamo maps the
    code it made to the original in `torch._dynamo.utils.orig_code_map`)."""
    from torch._dynamo.utils import orig_code_map
    frame = sys._getframe(1)
    while frame is not None and (frame.f_code.co_filename != user_file
                                 or frame.f_code in orig_code_map):
        frame = frame.f_back
    return frame.f_lineno if frame is not None else None


def _cudagraph_logger_names() -> set[str]:
    """The known loggers, and any other torch registered for the artifact."""
    names = set(CUDAGRAPH_LOGGERS)
    try:
        from torch._logging._internal import log_registry
        names.update(q for q in log_registry.artifact_log_qnames if q.endswith(".__cudagraphs"))
    except (ImportError, AttributeError):  # a torch without the registry: the known names
        pass
    return names


def guard_rerecord_reason() -> None:
    """`log_data_ptr_mismatch` as `cudagraph_trees` calls it, its assertion turned into the
    mismatch's own text (see the module's docstring)."""
    from torch._inductor import cudagraph_trees
    original = cudagraph_trees.log_data_ptr_mismatch

    @functools.wraps(original)
    def log_data_ptr_mismatch(placeholders, inputs, recorded_data_ptr, target_idxs, mismatch):
        try:
            return original(placeholders, inputs, recorded_data_ptr, target_idxs, mismatch)
        except AssertionError:
            return f"{mismatch}."

    cudagraph_trees.log_data_ptr_mismatch = log_data_ptr_mismatch


def follow_tree_manager(handler: CudagraphLogHandler) -> None:
    """While the CUDA graph tree manager runs a compiled function (warm-up, recording, replay,
    re-recording, or a skip), the handler knows the function's compile id and name:
    `CUDAGraphTreeManager.run(new_inputs, function_id)` (torch 2.11-2.15) maps the id to both."""
    from torch._inductor.cudagraph_trees import CUDAGraphTreeManager
    original = CUDAGraphTreeManager.run

    @functools.wraps(original)
    def run(self, new_inputs, function_id):
        handler.running.append(_function_of(handler.session, self, function_id))
        try:
            return original(self, new_inputs, function_id)
        finally:
            handler.running.pop()

    CUDAGraphTreeManager.run = run


def _function_of(session: CaptureSession, manager, function_id) -> tuple[str | None, str | None]:
    try:
        compile_id = manager.id_to_compile_id.get(function_id)
        return (session.compile_ids.of(str(compile_id)) if compile_id is not None else None,
                manager.get_func_name(function_id))
    except (AttributeError, KeyError):  # a torch whose manager keeps them otherwise
        return None, None


def record_cudagraph_log(session: CaptureSession) -> CudagraphLogHandler:
    import torch
    handler = CudagraphLogHandler(session)
    if torch.cuda.is_available():  # CUDA graphs need CUDA; a CPU job saves the import (0.7 s)
        guard_rerecord_reason()
        follow_tree_manager(handler)
    for name in sorted(_cudagraph_logger_names()):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
        logger.propagate = False  # the handler hands on what would have propagated
    return handler


def attach(session: CaptureSession) -> None:
    """`cudagraph_log` records: why CUDA graphs were skipped or recorded again."""
    attached(session, "cudagraphs", record_cudagraph_log)
