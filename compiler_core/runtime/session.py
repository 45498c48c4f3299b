"""One job's capture state, and the structured trace every feature reads.

The features' hooks (capture.py, hooks/<feature>.py, ...) all write through the job's
`CaptureSession`, which the steps after the script read too. This module imports none of those
hooks, so each of them can import it: the runner attaches them after `CaptureSession.attach`, in
the feature registry's order (`features.ATTACHMENTS`).

The structured trace (`torch._logging._internal.trace_log`) is attached here rather than as a
feature: it is the source of most stages, and the records it writes (the output modules, the
started compiles) are what the other hooks and the steps after the script place theirs by.
"""

from __future__ import annotations

import contextlib
import logging
import os

import torch
from torch._guards import CompileContext

from ..compile_ids import CompileIds
from ..options import Options
from ..report.trace_log import TraceConverter
from ..wire import RecordWriter
from .views import node_table, root_module, trace_views

IR_LOGGERS = {
    "ir_pre_fusion": "torch._inductor.debug.__ir_pre_fusion",
    "ir_post_fusion": "torch._inductor.debug.__ir_post_fusion",
}


def copy_graph_module(gm):
    """A copy of the graph (sharing parameters), safe from passes that rewrite it in place."""
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    return torch.fx.GraphModule(gm, graph)


class TraceHandler(logging.Handler):
    """Turns structured-trace log records into torchbolt records (the conversion is shared with
    the reader of TORCH_TRACE log files, report/trace_log.py)."""

    def __init__(self, session: CaptureSession):
        super().__init__(logging.DEBUG)
        self.session = session
        self.converter = TraceConverter()
        # trace_log sends each filename once, as an id; those interned before this handler
        # (the zygote's warm-up compile) come from torch's own table.
        from torch._logging.structured import INTERN_TABLE
        self.converter.interned.update({index: name for name, index in INTERN_TABLE.items()})

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if not isinstance(metadata, dict):
            return
        # converted also while paused: the converter keeps the filenames later records name by id
        converted = self.converter.convert(metadata)
        if converted is None:
            return
        name, pytorch_id, meta = converted
        self.session.compile_ids.start(name, pytorch_id)  # also while paused: PyTorch's numbering
        compile_id = self.session.compile_ids.of(pytorch_id)
        # The kernels' line owners go with their output module, also those of a paused compile.
        owners = self.session.line_owners if name == "inductor_output_code" else None
        kernel_lines = owners.take(self.session.user_file) if owners is not None else None
        if not self.session.recording:
            return
        if name == "dynamo_start":  # once per compile, however often its analysis restarts
            self.session.started.append(compile_id)
        if name == "inductor_post_grad_graph":  # the graph the modules pass just saw
            meta = {**meta, "modules": self.session.post_grad_modules,
                    "seq_nrs": self.session.post_grad_seq_nrs}
            self.session.post_grad_modules, self.session.post_grad_seq_nrs = {}, {}
        if name == "inductor_output_code" and (meta.get("file_path") or meta.get("filename")):
            path = os.path.abspath(meta.get("file_path") or meta["filename"])
            self.session.output_modules[path] = compile_id
        self.session.writer.emit(name, compile_id, getattr(record, "payload", None), **meta)
        if kernel_lines is not None:
            self.session.writer.emit("kernel_lines", compile_id, None, kernels=kernel_lines)


class CaptureSession:
    """One job's capture state, shared by the hooks and the steps after the script.

    `options`, `device`: the job's, for the hooks that depend on them (compile defaults,
    timings). `graphs`: the Dynamo graphs as backends received them, (compile id, copy of the
    GraphModule, example inputs), for the Core ATen / prims views (`emit_views`) and the GPU
    preview, which compiles them again after the script. `output_modules`: Inductor output module
    file (absolute path) -> compile id, to place its kernels after the script. `started`: compile
    ids in the order their compiles began; `codes`: compile id -> the code object Dynamo compiled
    (`calls.py` reads both to tell which cache entry served a call). `line_owners`, `compiled`,
    `programs`, `aoti`: what their attachments install, for the trace and the steps after the
    script (None until attached). `compile_ids`: PyTorch's numbering of compiles, which starts
    again after `torch._dynamo.reset()`; every record names a compile by `compile_id` (the
    result's id, `compiler_core/compile_ids.py`)."""

    def __init__(self, writer: RecordWriter, user_file: str, options: Options, device: str):
        self.writer, self.user_file = writer, user_file
        self.options, self.device = options, device
        self.graphs: list[tuple] = []
        self.views_done = 0  # graphs[:views_done] have had their views emitted
        self.output_modules: dict[str, str | None] = {}
        self.started: list[str] = []
        self.codes: dict[str, object] = {}
        self.kernels_before: set[int] = set()  # ids of Triton kernels alive before the script
        self.line_owners = None  # what each generated kernel line was for (line_owners.attach)
        self.post_grad_modules: dict[str, list] = {}  # node -> module stack, of the graph in hand
        self.post_grad_seq_nrs: dict[str, int | None] = {}  # node -> autograd seq_nr, same graph
        self.compiled = self.programs = self.aoti = None
        self.compile_ids = CompileIds()
        self._paused = False

    def compile_id(self) -> str | None:
        """The result's id of the compile being compiled, if any."""
        pytorch_id = CompileContext.current_compile_id()
        return self.compile_ids.of(str(pytorch_id) if pytorch_id is not None else None)

    @contextlib.contextmanager
    def paused(self):
        """Record nothing while torchbolt compiles for itself (views, GPU preview, timing)."""
        previous, self._paused = self._paused, True
        try:
            yield
        finally:
            self._paused = previous  # re-entrant: an inner pause must not end an outer one

    @property
    def recording(self) -> bool:
        """False while torchbolt compiles for itself."""
        return not self._paused

    def record_graph(self, gm, example_inputs) -> None:
        """Node table of the Dynamo graph a backend is about to receive; keep a copy for the
        views."""
        if self._paused:
            return
        compile_id = self.compile_id()
        # The lists too: a compiled autograd graph takes its inputs as a list it empties when it
        # runs (`set_locals_to_steal`), which the views need after the script.
        inputs = [list(x) if isinstance(x, list) else x for x in example_inputs]
        self.graphs.append((compile_id, copy_graph_module(gm), inputs))
        self.writer.emit("fx_nodes", compile_id, None, nodes=node_table(gm, self.user_file),
                         root_module=root_module(gm))

    def emit_views(self) -> None:
        """Core ATen / prims views of the graphs captured since the last call.

        Run after the script and its timings (the `views` option), outside any backend call:
        every stage PyTorch produces arrives first, and neither PyTorch's compile-time metrics
        nor the compiles themselves wait for torchbolt's re-tracing."""
        while self.views_done < len(self.graphs):
            compile_id, gm, example_inputs = self.graphs[self.views_done]
            self.views_done += 1
            with self.paused():
                views = trace_views(gm, example_inputs)
            for stage, text_or_error in views.items():
                if isinstance(text_or_error, Exception):
                    self.writer.emit("stage_error", compile_id, None, stage=stage,
                                     message=f"{type(text_or_error).__name__}: {text_or_error}")
                else:
                    self.writer.emit(stage, compile_id, text_or_error)

    def attach(self) -> None:
        """Attach the structured trace. Call once per process, after `config.configure_job`,
        before the features' hooks attach and the script runs."""
        from torch._logging._internal import trace_log

        trace_log.addHandler(TraceHandler(self))
        trace_log.setLevel(logging.DEBUG)
