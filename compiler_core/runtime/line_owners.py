"""Which FX node Inductor was emitting each generated kernel line for (job process side).

Inductor's provenance tracking maps a whole kernel to the post-grad nodes fused into it; a fused
kernel's lines are not told apart. This records, line by line, the node current while each line
was written, in three steps through Inductor's own objects (torch 2.11-2.13):

1. lowering: every `ir.Loops` (pointwise, reduction ...) made while Inductor lowers an FX node
   gets its `inner_fn` wrapped so that, while it runs, that node is the current owner (a loader of
   another node's `Loops` called inside it makes that node current for its part); a buffer's
   store belongs to the node whose `Loops` computed the stored value;
2. loop bodies: each node of a `LoopBody` graph traced from those functions is stamped with the
   owner current when it was traced (`LightTracer.create_node`);
3. codegen: while a `LoopBody` graph runs to generate a kernel (`InterpreterShim.run_node`), every
   line written to a code buffer (`IndentedBuffer.writeline`) is recorded for the kernel being
   generated with its node's owner; `define_kernel` names the kernel.

Each owner is recorded as `[post-grad node name, user line]`, the user line being the innermost
frame of the user's file in the node's `stack_trace` (what the FX stages' `# File:` comments show).
Lines written outside a loop body (index set-up, signature) have no owner. The loop IR dumps
(`ir_pre_fusion` / `ir_post_fusion`) get each scheduler node's origins the same way.
"""

from __future__ import annotations

import functools

from ..parsers.common import last_user_line
from .session import CaptureSession

_owners: list = []  # FX nodes, innermost last, while a loop body is traced or run


def current_owner():
    return _owners[-1] if _owners else None


def _owned(fn, node):
    @functools.wraps(fn)
    def run_as_owner(*args, **kwargs):
        _owners.append(node)
        try:
            return fn(*args, **kwargs)
        finally:
            _owners.pop()
    return run_as_owner


def owner_entry(node, user_file: str) -> list:
    """`[name, user line]` of a post-grad FX node."""
    return [node.name, last_user_line(node.meta.get("stack_trace") or "", user_file)]


class LineOwners:
    """The owners of the lines written for each kernel, until taken (one output module's)."""

    def __init__(self):
        self.written: dict[int, tuple[object, dict]] = {}  # id(kernel) -> (kernel, text -> nodes)
        self.kernels: dict[str, dict] = {}  # kernel name -> text -> nodes

    def write(self, kernel, text: str, node) -> None:
        _, lines = self.written.setdefault(id(kernel), (kernel, {}))
        owners = lines.setdefault(text, [])
        if node not in owners:
            owners.append(node)

    def claim(self, name: str, kernel=None) -> None:
        """The lines written for `kernel` (all pending lines when None: a C++ kernel is written
        by several sub-kernels) belong to the kernel `define_kernel` named `name`."""
        keys = [id(kernel)] if kernel is not None else list(self.written)
        lines = self.kernels.setdefault(name, {})
        for key in keys:
            for text, nodes in self.written.pop(key, (None, {}))[1].items():
                merged = lines.setdefault(text, [])
                merged.extend(n for n in nodes if n not in merged)

    def take(self, user_file: str) -> dict:
        """{kernel name: {line text: [[node, user line], ...]}}, and forget them."""
        out = {name: {text: [owner_entry(n, user_file) for n in nodes]
                      for text, nodes in lines.items()}
               for name, lines in self.kernels.items()}
        self.kernels, self.written = {}, {}
        return out


def scheduler_origins(nodes, user_file: str) -> dict:
    """{scheduler node name: [[origin node, user line], ...]} of the nodes an IR dump shows."""
    out = {}
    for snode in nodes:
        for part in [snode, *(snode.get_nodes() if len(snode.get_nodes()) > 1 else [])]:
            ir_node = getattr(part, "node", None)
            origins = getattr(ir_node, "origins", None) or [
                o for sub in part.get_nodes() for o in (getattr(sub.node, "origins", None) or [])]
            out[part.get_name()] = [owner_entry(o, user_file) for o in dict.fromkeys(origins)]
    return out


def _line_text(line) -> str | None:
    text = getattr(line, "line", line)  # a DeferredLine holds its text
    return text.strip() if isinstance(text, str) and text.strip() else None


def install(owners: LineOwners, on_ir_dump) -> None:
    """Patch Inductor (once per process) so that `owners` receives every kernel's lines, and
    `on_ir_dump(stage, scheduler_nodes)` runs at each loop IR dump."""
    from torch._inductor import debug, ir, loop_body
    from torch._inductor.codegen.common import Kernel
    from torch._inductor.codegen.cpp import CppScheduling
    from torch._inductor.codegen.triton import TritonScheduling
    from torch._inductor.utils import IndentedBuffer
    from torch._inductor.virtualized import V

    loops_post_init = ir.Loops.__post_init__

    def __post_init__(self):
        loops_post_init(self)
        node = getattr(V.graph, "current_node", None)  # the FX node being lowered, if any
        if node is not None:
            object.__setattr__(self, "inner_fn", _owned(self.inner_fn, node))
            object.__setattr__(self, "line_owner", node)

    get_store_function = ir.ComputedBuffer.get_store_function

    def owned_store(self):  # a buffer's store is written for the node that computed its value
        store = get_store_function(self)
        node = getattr(self.data, "line_owner", None)
        return _owned(store, node) if node is not None else store

    create_node = loop_body.LightTracer.create_node

    def stamp(self, *args, **kwargs):
        node = create_node(self, *args, **kwargs)
        if current_owner() is not None:
            node.meta["owner"] = current_owner()
        return node

    run_node = loop_body.InterpreterShim.run_node

    def run_as_owner(self, n):
        owner = n.meta.get("owner")
        if owner is None:
            return run_node(self, n)
        _owners.append(owner)
        try:
            return run_node(self, n)
        finally:
            _owners.pop()

    writeline = IndentedBuffer.writeline

    def record_line(self, line):
        writeline(self, line)
        if _owners and (text := _line_text(line)) and isinstance(kernel := V.kernel, Kernel):
            owners.write(kernel, text, _owners[-1])

    def claiming(define_kernel, with_kernel: bool):
        @functools.wraps(define_kernel)
        def define(self, src_code, *args, **kwargs):
            name = define_kernel(self, src_code, *args, **kwargs)
            kernel = (args[1] if len(args) > 1 else kwargs.get("kernel")) if with_kernel else None
            owners.claim(name, kernel)
            return name
        return define

    def dumping(log, stage):
        @functools.wraps(log)
        def dump(nodes):
            log(nodes)
            on_ir_dump(stage, nodes)
        return dump

    ir.Loops.__post_init__ = __post_init__
    ir.ComputedBuffer.get_store_function = owned_store
    loop_body.LightTracer.create_node = stamp
    loop_body.InterpreterShim.run_node = run_as_owner
    IndentedBuffer.writeline = record_line
    TritonScheduling.define_kernel = claiming(TritonScheduling.define_kernel, True)
    CppScheduling.define_kernel = claiming(CppScheduling.define_kernel, False)
    debug.log_ir_pre_fusion = dumping(debug.log_ir_pre_fusion, "ir_pre_fusion")
    debug.log_ir_post_fusion = dumping(debug.log_ir_post_fusion, "ir_post_fusion")


def record_ir_origins(session: CaptureSession, stage: str, nodes) -> None:
    """The origin FX nodes of each scheduler node of a loop IR dump (`ir_pre_fusion` ...)."""
    if session.recording:
        session.writer.emit("ir_origins", session.compile_id(), None, stage=stage,
                            ops=scheduler_origins(nodes, session.user_file))


def attach(session: CaptureSession) -> None:
    """Line-by-line provenance for `session`: its table of owners, which the structured trace's
    output code and the steps after the script take from. An Inductor without these seams turns
    the provenance off (a `stage_error`, the table stays empty), not the job."""
    session.line_owners = LineOwners()
    try:
        install(session.line_owners, functools.partial(record_ir_origins, session))
    except (ImportError, AttributeError) as exc:
        session.writer.emit("stage_error", None, None, stage="line_owners",
                            message=f"line-by-line provenance is off: {type(exc).__name__}: {exc}")
