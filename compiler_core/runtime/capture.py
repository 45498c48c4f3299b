"""Capture hooks, attached inside the worker child before the user's script runs.

Everything comes from PyTorch's own capture points (see shared/DESIGN.md):
- the structured trace (`torch._logging._internal.trace_log`), the source of most stages;
- `register_bytecode_hook`, for the original and transformed bytecode of every frame;
- Inductor's `ir_pre_fusion` / `ir_post_fusion` artifact loggers, for the loop-level IR;
- the backend call (`_TorchCompileInductorWrapper.__call__` / `_TorchCompileWrapper.__call__`,
  which `torch.compile` builds for every backend in torch 2.11-2.13), which hands us the Dynamo
  `GraphModule` for the node table and the Core ATen / prims views;
- Inductor's `post_grad_custom_post_pass`, which sees each post-grad graph, for its nodes' module
  stacks and autograd sequence numbers (the printed post-grad graph has neither).
The hooks of one job share its `CaptureSession`, which the steps after the script read too.
"""

from __future__ import annotations

import contextlib
import dis
import functools
import io
import logging
import os

import torch
import torch._inductor.config
from torch._guards import CompileContext
from torch._inductor.custom_graph_pass import CustomGraphPass

from ..wire import RecordWriter
from ..report.trace_log import TraceConverter
from . import line_owners, why_logs
from .def_lines import def_line
from .views import module_stack, node_table, root_module, trace_views

IR_LOGGERS = {
    "ir_pre_fusion": "torch._inductor.debug.__ir_pre_fusion",
    "ir_post_fusion": "torch._inductor.debug.__ir_post_fusion",
}


def current_compile_id() -> str | None:
    cid = CompileContext.current_compile_id()
    return str(cid) if cid is not None else None


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
        name, compile_id, meta = converted
        # The kernels' line owners go with their output module, also those of a paused compile.
        kernel_lines = (self.session.line_owners.take(self.session.user_file)
                        if name == "inductor_output_code" else None)
        if not self.session.recording:
            return
        if name == "dynamo_start" and compile_id not in self.session.started:
            self.session.started.append(compile_id)  # a restarted analysis starts again
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


class IRHandler(logging.Handler):
    """Receives Inductor's loop-level IR dumps; tags them with the compile id being compiled."""

    def __init__(self, session: CaptureSession, stage: str):
        super().__init__(logging.DEBUG)
        self.session, self.stage = session, stage

    def emit(self, record: logging.LogRecord) -> None:
        if self.session.recording:
            self.session.writer.emit(self.stage, current_compile_id(), record.getMessage())


def _decompile(code) -> str | None:
    """Python source for a code object via depyf; None where it cannot (depyf lags torch)."""
    try:
        import depyf
        return depyf.decompile(code)
    except Exception:  # any decompiler failure only costs the source view; dis stays
        return None


def _dis_text(code) -> str:
    out = io.StringIO()
    dis.dis(code, file=out, depth=0)
    return out.getvalue()


def bytecode_hook(session: CaptureSession):
    def hook(code, new_code):
        if not session.recording:
            return None
        session.codes[current_compile_id()] = code
        session.writer.emit("bytecode", current_compile_id(), None,
                    name=code.co_name, qualname=getattr(code, "co_qualname", code.co_name),
                    filename=code.co_filename, line=code.co_firstlineno,
                    def_line=def_line(code, session.user_file),
                    original=_dis_text(code), transformed=_dis_text(new_code),
                    original_source=_decompile(code), transformed_source=_decompile(new_code))
        return None
    return hook


def copy_graph_module(gm):
    """A copy of the graph (sharing parameters), safe from passes that rewrite it in place."""
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    return torch.fx.GraphModule(gm, graph)


def patch_backend_wrappers(on_graph) -> None:
    """Call `on_graph(gm, example_inputs)` before every backend `torch.compile` built."""
    for cls in (torch._TorchCompileInductorWrapper, torch._TorchCompileWrapper):
        original = cls.__call__

        @functools.wraps(original)
        def __call__(self, model_, inputs_, *args, _original=original, **kwargs):
            on_graph(model_, inputs_)
            return _original(self, model_, inputs_, *args, **kwargs)

        cls.__call__ = __call__


def seq_nrs(graph) -> dict[str, int | None]:
    """Node -> autograd `seq_nr`: None for an input (its number means nothing); nodes traced
    without autograd (-1, inference graphs) or without a number left out."""
    out: dict[str, int | None] = {}
    for node in graph.nodes:
        seq = node.meta.get("seq_nr")
        if node.op == "placeholder":
            out[node.name] = None
        elif isinstance(seq, int) and seq >= 0:
            out[node.name] = seq
    return out


class PostGradModules(CustomGraphPass):
    """Inductor's last custom post-grad pass: reads each node's module stack and `seq_nr`,
    changes nothing. It runs on the graph (and its subgraphs) just before Inductor prints it as
    the `inductor_post_grad_graph` artifact, which carries the tables (TraceHandler).

    `seq_nr` is the autograd sequence number of the forward op a node was traced for; AOTAutograd
    gives a backward node its forward op's number. It links a backward graph's nodes to the
    forward's, whose Dynamo nodes Inductor's provenance names: a lazily compiled backward's own
    provenance mapping is empty (torch 2.13 dumps it only while `_pre_grad_graph_id` is set)."""

    def __init__(self, session: CaptureSession):
        self.session = session

    def __call__(self, graph) -> None:
        if self.session.recording:
            self.session.post_grad_modules.update(
                {node.name: stack for node in graph.nodes if (stack := module_stack(node))})
            self.session.post_grad_seq_nrs.update(seq_nrs(graph))

    def uuid(self) -> str:
        return "torchbolt-post-grad-modules"

    def __deepcopy__(self, memo):
        """`torch.compile` deep-copies Inductor's config: every copy reports to this session."""
        return self


class CaptureSession:
    """One job's capture state, shared by the hooks and the steps after the script.

    `graphs`: the Dynamo graphs as backends received them, (compile id, copy of the GraphModule,
    example inputs), for the Core ATen / prims views (`emit_views`) and the GPU preview, which
    compiles them again after the script. `output_modules`: Inductor output module file (absolute
    path) -> compile id, to place its kernels after the script. `started`: compile ids in the order
    their compiles began; `codes`: compile id -> the code object Dynamo compiled (`calls.py`
    reads both to tell which cache entry served a call)."""

    def __init__(self, writer: RecordWriter, user_file: str):
        self.writer, self.user_file = writer, user_file
        self.graphs: list[tuple] = []
        self.views_done = 0  # graphs[:views_done] have had their views emitted
        self.output_modules: dict[str, str | None] = {}
        self.started: list[str] = []
        self.codes: dict[str, object] = {}
        self.kernels_before: set[int] = set()  # ids of Triton kernels alive before the script
        self.line_owners = line_owners.LineOwners()  # what each generated kernel line was for
        self.post_grad_modules: dict[str, list] = {}  # node -> module stack, of the graph in hand
        self.post_grad_seq_nrs: dict[str, int | None] = {}  # node -> autograd seq_nr, same graph
        self._paused = False

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
        compile_id = current_compile_id()
        self.graphs.append((compile_id, copy_graph_module(gm), list(example_inputs)))
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

    def record_ir_origins(self, stage: str, nodes) -> None:
        """The origin FX nodes of each scheduler node of a loop IR dump (`ir_pre_fusion` ...)."""
        if self.recording:
            self.writer.emit("ir_origins", current_compile_id(), None, stage=stage,
                             ops=line_owners.scheduler_origins(nodes, self.user_file))

    def attach(self) -> None:
        """Attach every capture hook. Call once per process, after `config.configure_job`,
        before the script runs."""
        from torch._dynamo.convert_frame import register_bytecode_hook
        from torch._logging._internal import trace_log

        trace_log.addHandler(TraceHandler(self))
        trace_log.setLevel(logging.DEBUG)
        for stage, logger_name in IR_LOGGERS.items():
            logger = logging.getLogger(logger_name)
            logger.addHandler(IRHandler(self, stage))
            logger.setLevel(logging.INFO)
            logger.propagate = False  # keep the IR out of the user's stderr
        register_bytecode_hook(bytecode_hook(self))
        patch_backend_wrappers(self.record_graph)
        try:
            line_owners.install(self.line_owners, self.record_ir_origins)
        except (ImportError, AttributeError) as exc:  # an Inductor without these seams
            self.writer.emit("stage_error", None, None, stage="line_owners",
                             message=f"line-by-line provenance is off: {type(exc).__name__}: {exc}")
        torch._inductor.config.post_grad_custom_post_pass = PostGradModules(self)
        why_logs.attach(self)  # after the IR loggers: the post-fusion IR ends a fusion log
        from . import why_gpu  # CUDA graph decisions and autotuning choices (it imports this module)
        why_gpu.attach(self)
