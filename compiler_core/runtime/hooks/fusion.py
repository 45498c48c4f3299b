"""Inductor's fusion decisions, from the scheduler's own fusion log (job process side).

The scheduler logs to the `fusion` artifact logger (`torch._inductor.scheduler.fusion_log`,
torch 2.11-2.14): `WhyNoFuse` objects ("cannot fuse op0 with op7: no shared data", the two node
names and the reason kept as fields), "fusing %s with %s" for each fusion made, and a line per
fusion round. `FusionLog` keeps those of one scheduler run and writes them as one `fusion_log`
record when the run ends, which is when the scheduler logs its nodes after fusion (the
`ir_post_fusion` artifact, enabled by `capture.attach_ir_loggers`): one record per graph, in
the order of the graphs' `ir_origins` and output modules. The logger stops propagating, so
nothing reaches the user's stderr. A big model logs thousands of lines, so at most
`DECISIONS_PER_GRAPH` distinct decisions are kept per graph and the rest counted.
"""

from __future__ import annotations

import logging

from ..session import IR_LOGGERS, CaptureSession

FUSION_LOGGER = "torch._inductor.scheduler.__fusion"
DECISIONS_PER_GRAPH = 1000
REASON_CHARS = 500
FUSED = "fusing %s with %s"  # Scheduler.fuse_two_nodes
ROUND = "===== attempting fusion"  # Scheduler.fuse_nodes, once per round


def _decision(record: logging.LogRecord) -> dict | None:
    """`{"nodes", "fused", "reason"}` of one fusion log line that decides, else None."""
    message = record.msg
    # a WhyNoFuse (torch/_inductor/scheduler.py), told by its fields: no import to break
    if hasattr(message, "name1") and hasattr(message, "reason"):
        try:
            reason = message.reason % message.args
        except (TypeError, ValueError, AttributeError):
            reason = record.getMessage()
        return {"nodes": [str(message.name1), str(message.name2)], "fused": False,
                "reason": str(reason)[:REASON_CHARS]}
    if message == FUSED and len(record.args or ()) == 2:
        return {"nodes": [str(name) for name in record.args], "fused": True,
                "reason": record.getMessage()}
    if isinstance(message, str) and message.startswith(("can fuse", "cannot fuse")):
        # benchmark fusion (GPU): its arguments are buffer names, not scheduler nodes
        return {"nodes": [], "fused": message.startswith("can fuse"),
                "reason": record.getMessage()[:REASON_CHARS]}
    return None


class FusionLog(logging.Handler):
    """Collects one scheduler run's fusion decisions; writes them when the run logs its IR
    after fusion (the handler sits on both loggers)."""

    def __init__(self, session: CaptureSession):
        super().__init__(logging.DEBUG)
        self.session = session
        self._reset()

    def _reset(self) -> None:
        self.decisions: dict[tuple, dict] = {}
        self.rounds = self.dropped = 0

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._take(record)
        except Exception as exc:  # the view is lost, never the user's compile
            self.session.writer.emit("stage_error", self.session.compile_id(), None,
                                     stage="fusion", message=f"{type(exc).__name__}: {exc}")
            self._reset()

    def _take(self, record: logging.LogRecord) -> None:
        if record.name == IR_LOGGERS["ir_post_fusion"]:
            self._write()
        elif isinstance(record.msg, str) and record.msg.startswith(ROUND):
            self.rounds += 1
        elif (decision := _decision(record)) is not None:
            key = (*decision["nodes"], decision["fused"], decision["reason"])
            if key in self.decisions:
                return  # the reorder round repeats the first round's refusals
            if len(self.decisions) < DECISIONS_PER_GRAPH:
                self.decisions[key] = decision
            else:
                self.dropped += 1

    def _write(self) -> None:
        if self.session.recording:
            self.session.writer.emit("fusion_log", self.session.compile_id(), None,
                                     graph=_graph_kind(), rounds=self.rounds,
                                     decisions=list(self.decisions.values()),
                                     dropped=self.dropped)
        self._reset()


def _graph_kind() -> str | None:
    """forward / backward / inference: the graph Inductor is compiling."""
    from torch._inductor.virtualized import V
    graph = V.graph
    if graph is None or not hasattr(graph, "is_backward"):
        return None
    return "backward" if graph.is_backward else "inference" if graph.is_inference else "forward"


def attach(session: CaptureSession) -> None:
    """Enable the fusion log for `session`; after `capture.attach_ir_loggers`, so that the
    post-fusion IR is recorded before the fusion log it ends."""
    handler = FusionLog(session)
    fusion = logging.getLogger(FUSION_LOGGER)
    fusion.addHandler(handler)
    fusion.setLevel(logging.DEBUG)
    fusion.propagate = False  # keep the log out of the user's stderr
    logging.getLogger(IR_LOGGERS["ir_post_fusion"]).addHandler(handler)
