"""Capture hooks, attached inside the worker child before the user's script runs.

Everything comes from PyTorch's own capture points (see shared/DESIGN.md); besides the structured
trace (`session.py`, attached before every feature), the hooks here:
- `register_bytecode_hook`, for the original and transformed bytecode of every frame;
- Inductor's `ir_pre_fusion` / `ir_post_fusion` artifact loggers, for the loop-level IR;
- the backend call (`_TorchCompileInductorWrapper.__call__` / `_TorchCompileWrapper.__call__`,
  which `torch.compile` builds for every backend in torch 2.11-2.13), which hands us the Dynamo
  `GraphModule` for the node table and the Core ATen / prims views;
- Inductor's `post_grad_custom_post_pass`, which sees each post-grad graph, for its nodes' module
  stacks and autograd sequence numbers (the printed post-grad graph has neither).
Each `attach_*` function is one feature's attachment ("runtime.capture:attach_bytecode" ...),
called with the job's `CaptureSession` (`features.ATTACHMENTS`, in the runner).
"""

from __future__ import annotations

import dis
import functools
import io
import logging
import sys

import torch
import torch._inductor.config
from torch._inductor.custom_graph_pass import CustomGraphPass

from .def_lines import def_line
from .session import IR_LOGGERS, CaptureSession
from .views import module_stack


class IRHandler(logging.Handler):
    """Receives Inductor's loop-level IR dumps; tags them with the compile id being compiled."""

    def __init__(self, session: CaptureSession, stage: str):
        super().__init__(logging.DEBUG)
        self.session, self.stage = session, stage

    def emit(self, record: logging.LogRecord) -> None:
        if self.session.recording:
            self.session.writer.emit(self.stage, self.session.compile_id(), record.getMessage())


def _decompile(code) -> tuple[str | None, str | None]:
    """(Python source of a code object via depyf, None) or (None, why it could not): depyf lags
    Python (0.20 has no handlers for the 3.13+ opcodes CALL_KW, LOAD_FAST_LOAD_FAST,
    LOAD_FAST_BORROW) and torch."""
    try:
        import depyf
        return depyf.decompile(code), None
    except Exception as exc:  # any decompiler failure only costs the source view; dis stays
        cause = exc.__cause__ or exc  # depyf wraps the failing handler's error
        version = getattr(sys.modules.get("depyf"), "__version__", "?")
        return None, f"depyf {version}: {type(cause).__name__}: {cause}"[:300]


def _sources(kind: str, code) -> dict:
    source, why = _decompile(code)
    return {f"{kind}_source": source, f"{kind}_source_error": why}


def _dis_text(code) -> str:
    out = io.StringIO()
    dis.dis(code, file=out, depth=0)
    return out.getvalue()


def bytecode_hook(session: CaptureSession):
    def hook(code, new_code):
        if not session.recording:
            return None
        session.codes[session.compile_id()] = code
        session.writer.emit("bytecode", session.compile_id(), None,
                    name=code.co_name, qualname=getattr(code, "co_qualname", code.co_name),
                    filename=code.co_filename, line=code.co_firstlineno,
                    def_line=def_line(code, session.user_file),
                    original=_dis_text(code), transformed=_dis_text(new_code),
                    **_sources("original", code), **_sources("transformed", new_code))
        return None
    return hook


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
    the `inductor_post_grad_graph` artifact, which carries the tables (`session.TraceHandler`).

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


def attach_bytecode(session: CaptureSession) -> None:
    """`bytecode` records: each frame's original and transformed bytecode, as Dynamo
    compiles it."""
    from torch._dynamo.convert_frame import register_bytecode_hook
    register_bytecode_hook(bytecode_hook(session))


def attach_backend_graphs(session: CaptureSession) -> None:
    """`fx_nodes` records, and the Dynamo graphs kept for the views and the GPU preview."""
    patch_backend_wrappers(session.record_graph)


def attach_ir_loggers(session: CaptureSession) -> None:
    """The loop-level IR before and after fusion, kept out of the user's stderr."""
    for stage, logger_name in IR_LOGGERS.items():
        logger = logging.getLogger(logger_name)
        logger.addHandler(IRHandler(session, stage))
        logger.setLevel(logging.INFO)
        logger.propagate = False


def attach_post_grad_modules(session: CaptureSession) -> None:
    """Each post-grad graph's module stacks and autograd `seq_nr`s (`PostGradModules`)."""
    torch._inductor.config.post_grad_custom_post_pass = PostGradModules(session)
