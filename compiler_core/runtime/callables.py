"""`torch.compile` as the script sees it: the job's options as defaults, and a record of each
compiled callable with the arguments of its calls (so eager and compiled can be timed on them).

A recorded call keeps a snapshot of its arguments as they were when the call began (same
values, sizes, strides and storage offset, so the compiled callable's guards pass again) and the
grad mode it ran in, and whether the script ran backward through the outputs of a call of that
signature: timing replays exactly the call that ran, not one like it.

The real `torch.compile` still does all the work; the wrapper only fills defaults and listens.
"""

from __future__ import annotations

import functools
import inspect
import sys
from dataclasses import dataclass, field

import torch
from torch.utils._pytree import tree_flatten, tree_map

from ..options import compile_arguments
from ..wire import RecordWriter
from .calls import CallTimeline
from .session import CaptureSession

MAX_SIGNATURES = 4  # distinct argument signatures kept per callable
ARGUMENT_CHARS = 80  # of each argument's description in a call record
# The torch.compile arguments the page's options set (`Options.compile_defaults`).
PAGE_ARGUMENTS = ("mode", "dynamic", "fullgraph", "backend")


@dataclass
class RecordedCall:
    args: tuple
    kwargs: dict
    grad_mode: str  # "grad", "no_grad" or "inference_mode"
    backward: bool = False  # the script ran backward through the outputs of a call like it


def watch_backward(call: RecordedCall | None, out) -> None:
    """Marks `call` once the script's backward reaches one of `out`'s tensors: a hook on each
    output that requires grad (`Tensor.register_hook`; it leaves the gradient as it is)."""
    if call is None or call.backward:
        return

    def ran(_grad):
        call.backward = True
    for leaf in tree_flatten(out)[0]:
        if isinstance(leaf, torch.Tensor) and leaf.requires_grad:
            leaf.register_hook(ran)


def grad_mode_now() -> str:
    if torch.is_inference_mode_enabled():
        return "inference_mode"
    return "grad" if torch.is_grad_enabled() else "no_grad"


def snapshot(value):
    """A copy of a tensor argument with its own storage laid out as the original's; other
    values as they are (Dynamo guards on them by value)."""
    if not isinstance(value, torch.Tensor):
        return value
    with torch.no_grad():
        if type(value) is torch.Tensor and value.layout == torch.strided:
            copy = torch.empty(0, dtype=value.dtype, device=value.device)
            copy.set_(value.untyped_storage().clone(), value.storage_offset(), value.size(),
                      value.stride())
        else:  # parameters, subclasses, sparse: a plain clone
            copy = value.detach().clone()
    return copy.requires_grad_(value.requires_grad)


@dataclass
class CompiledCallable:
    index: int
    name: str
    kind: str  # "function" or "module"
    original: object
    compiled: object
    calls: list[RecordedCall] = field(default_factory=list)
    signatures: list[tuple] = field(default_factory=list)
    hooks: list = field(default_factory=list)  # a module's recording hooks, until removed


def describe(value) -> str:
    """A short, stable description of one argument: `f32[8, 16] cpu` or the value's type."""
    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        grad = " grad" if value.requires_grad else ""
        return f"{dtype}{list(value.shape)} {value.device.type}{grad}"
    if isinstance(value, (int, float, bool, str)) or value is None:
        return repr(value)
    return type(value).__name__


def named_arguments(entry: CompiledCallable, args: tuple, kwargs: dict) -> dict[str, str]:
    """The call's arguments by parameter name (a module's `forward`'s), each described and cut
    to `ARGUMENT_CHARS`; none when they do not bind (the call itself will say why)."""
    target = entry.original.forward if entry.kind == "module" else entry.original
    try:
        bound = inspect.signature(target).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return {}
    return {name: describe(value)[:ARGUMENT_CHARS] for name, value in bound.arguments.items()}


def compile_argument(value):
    """One torch.compile argument as JSON: a plain value as it is, a backend by its name,
    anything else (an `options` dict) as its cut repr."""
    if isinstance(value, (str, bool, int, float)) or value is None:
        return value
    return getattr(value, "__name__", None) or repr(value)[:ARGUMENT_CHARS]


def user_line(user_file: str) -> int | None:
    """The line of the user's script the innermost frame of it is at (the call site)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename != user_file:
        frame = frame.f_back
    return frame.f_lineno if frame is not None else None


class CompileRecorder:
    """Installs itself as `torch.compile` for the duration of a job."""

    def __init__(self, writer: RecordWriter, defaults: dict, user_file: str,
                 timeline: CallTimeline | None = None):
        self.writer, self.defaults, self.user_file = writer, defaults, user_file
        self.timeline = timeline  # told where each call begins and ends
        self.callables: list[CompiledCallable] = []
        self._open: list[RecordedCall | None] = []  # the recorded calls under way, innermost last
        self.real_compile = torch.compile  # the real one, also for timing's own compiles

    def install(self) -> None:
        torch.compile = self.compile

    def compile(self, model=None, **kwargs):
        if model is None:  # used as @torch.compile(...) with arguments
            return lambda fn: self.compile(fn, **kwargs)
        merged = compile_arguments(self.defaults, kwargs)
        compiled = self.real_compile(model, **merged)
        entry = CompiledCallable(len(self.callables), getattr(model, "__qualname__", None)
                                 or type(model).__name__,
                                 "module" if isinstance(model, torch.nn.Module) else "function",
                                 model, compiled)
        self.callables.append(entry)
        self.writer.emit("compiled_callable", None, None, index=entry.index, name=entry.name,
                         kind=entry.kind, line=user_line(self.user_file),
                         options={k: compile_argument(v) for k, v in merged.items()},
                         arguments={k: compile_argument(v) for k, v in kwargs.items()},
                         overrides=self.overrides(kwargs))
        if isinstance(compiled, torch.nn.Module):
            entry.hooks = [
                compiled.register_forward_pre_hook(
                    lambda _mod, args, kw: self._record_call(entry, args, kw), with_kwargs=True),
                # on an exception, torch calls it from its `except` block with no output
                compiled.register_forward_hook(
                    lambda _mod, _args, out: self._call_ended(
                        out, sys.exc_info()[1] if out is None else None), always_call=True)]
            return compiled

        @functools.wraps(compiled)
        def call(*args, **kw):
            if torch.compiler.is_compiling():  # called from inside another compiled region:
                return compiled(*args, **kw)   # let Dynamo inline it, as without torchbolt
            self._record_call(entry, args, kw)
            try:
                out = compiled(*args, **kw)
            except BaseException as error:
                self._call_ended(None, error)
                raise
            self._call_ended(out)
            return out
        return call

    def overrides(self, own: dict) -> list[str]:
        """The page's options that the call's own arguments set otherwise: the page's value is
        its default for the call, else torch.compile's own default (mode None is "default")."""
        signature = inspect.signature(self.real_compile).parameters
        changed = []
        for key in PAGE_ARGUMENTS:
            if key not in own:
                continue
            page = self.defaults.get(key, signature[key].default)
            if not (own[key] == page or (key == "mode" and {own[key], page} <= {None, "default"})):
                changed.append(key)
        return changed

    def remove_hooks(self) -> None:
        """Once the script has ended: each compiled module as the script's author has it (and
        Dynamo's guard-complete hook as the script had it), so that timings call it without
        torchbolt's hooks (with them, a small module's compiled calls took 13 % longer on a
        2-core CPU, and on the H200 the launch-bound models' speed-ups read 5-11 % under
        do_bench's)."""
        for entry in self.callables:
            for hook in entry.hooks:
                hook.remove()
            entry.hooks = []
        if self.timeline:
            self.timeline.uninstall()

    def _call_ended(self, out, raised: BaseException | None = None) -> None:
        """`out`: the call's outputs (None when it raised `raised`)."""
        watch_backward(self._open.pop() if self._open else None, out)
        if self.timeline:
            self.timeline.end(raised)

    def _record_call(self, entry: CompiledCallable, args: tuple, kwargs: dict) -> None:
        if self.timeline:
            self.timeline.begin(entry.index, user_line(self.user_file),
                                lambda: named_arguments(entry, args, kwargs))
        signature = tuple(describe(a) for a in args) + tuple(
            f"{k}={describe(v)}" for k, v in kwargs.items())
        self._open.append(self._recorded(entry, signature, args, kwargs))

    def _recorded(self, entry: CompiledCallable, signature: tuple, args: tuple,
                  kwargs: dict) -> RecordedCall | None:
        """The recorded call of `signature`, recorded now if it is new; None past
        `MAX_SIGNATURES`."""
        if signature in entry.signatures:
            return entry.calls[entry.signatures.index(signature)]
        if len(entry.signatures) >= MAX_SIGNATURES:
            return None
        entry.signatures.append(signature)
        entry.calls.append(RecordedCall(tree_map(snapshot, args), tree_map(snapshot, kwargs),
                                        grad_mode_now()))
        self.writer.emit("compiled_call", None, None, callable=entry.index,
                         arguments=list(signature))
        return entry.calls[-1]


def attach(session: CaptureSession) -> None:
    """Record the script's `torch.compile` calls, with the job's options as defaults and each
    call on the session's timeline; `session.compiled` is what the timings replay."""
    session.compiled = CompileRecorder(session.writer, session.options.compile_defaults(),
                                       session.user_file, timeline=CallTimeline(session))
    session.compiled.install()
    session.compiled.timeline.install()
