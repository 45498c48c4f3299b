"""`torch.export.export`, `torch.jit.trace`, `torch.jit.script` and `torch.compiler.precompile` as
the script sees them: the real functions, each program they return recorded beside the compiles,
so the AOT paths (export, precompile) and the older graph capture (TorchScript) can be compared
with Dynamo's on the same code.

One `export` record per ExportedProgram (its text as PyTorch prints it: the graph with the
signature, the graph signature, the range constraints; and the program decomposed to Core ATen
by `run_decompositions()`), one `torchscript` record per traced or scripted function or module
(its inlined TorchScript graph and code, and the warnings the call raised, TracerWarnings
included). Only the outermost call is recorded (torch may call these itself).

`torch.compiler.precompile` (torch 2.14: a function returning `(python_code, cache)`; 2.15: a
module whose `capture(fn, artifact_path=..., cache_path=...)` traces and lowers `fn` on the
capture's one call and writes `python_code` to `artifact_path` when its block ends or on
`save()`; absent before 2.14) is a compile of its own, `precompile-N`: PyTorch logs its lowering
(make_fx, then AOTAutograd and Inductor, no Dynamo frame) with no compile id, so what the job
records with none while it runs is recorded under that id, and one `precompile_source` record
holds the standalone source the API returned or wrote (PyTorch logs it nowhere).
"""

from __future__ import annotations

import contextlib
import functools
import os
import warnings

import torch

from ..features.precompile import compile_name
from .callables import user_line
from .session import CaptureSession


class ProgramRecorder:
    """Installs itself as `torch.export.export`, `torch.jit.trace` and `torch.jit.script`."""

    def __init__(self, session: CaptureSession, user_file: str):
        self.session, self.writer, self.user_file = session, session.writer, user_file
        self.real_export = torch.export.export
        self.real_trace, self.real_script = torch.jit.trace, torch.jit.script
        self.counts = {"export": 0, "torchscript": 0, "precompile": 0}
        self.exported: list = []  # the ExportedPrograms recorded, by index (the AOT path's)
        self.depth = 0

    @property
    def recorded(self) -> int:
        return sum(self.counts.values())

    def install(self) -> None:
        torch.export.export = self._outermost(self.export, self.real_export)
        torch.jit.trace = self._outermost(self.trace, self.real_trace)
        torch.jit.script = self._outermost(self.script, self.real_script)
        api = getattr(torch.compiler, "precompile", None)
        if hasattr(api, "capture"):  # torch 2.15: a module
            self.real_capture = api.capture
            api.capture = self._outermost(self.capture, self.real_capture)
        elif api is not None:  # torch 2.14: the one instance of a class, called
            self.real_precompile = type(api).__call__
            type(api).__call__ = self._outermost(self.precompile, self.real_precompile)

    def _outermost(self, recording, real):
        @functools.wraps(real)
        def call(*args, **kwargs):
            if self.depth or not self.session.recording:
                return real(*args, **kwargs)
            self.depth += 1
            try:
                return recording(user_line(self.user_file), *args, **kwargs)
            finally:
                self.depth -= 1
        return call

    def index_of(self, program) -> int | None:
        """The index of an ExportedProgram the script got from torch.export.export, else None."""
        return next((i for i, p in enumerate(self.exported) if p is program), None)

    def _next(self, kind: str) -> int:
        self.counts[kind] += 1
        return self.counts[kind] - 1

    def export(self, line, *args, **kwargs):
        # Strict export runs Dynamo: its compile is the export's, not one of the script's compiles.
        with self.session.paused():
            program = self.real_export(*args, **kwargs)
        stages = {"exported_program": str(program)}
        try:
            with warnings.catch_warnings(), self.session.paused():
                warnings.simplefilter("ignore")  # torch's own deprecation chatter, not the user's
                stages["export_core_aten"] = str(program.run_decompositions())
        except Exception as exc:  # the decomposed view failing costs that view only
            self.writer.emit("stage_error", None, None, stage="export_core_aten",
                             message=f"{type(exc).__name__}: {exc}")
        self.writer.emit("export", None, None, index=self._next("export"), line=line,
                         stages=stages)
        self.exported.append(program)
        return program

    def trace(self, line, *args, **kwargs):
        return self._torchscript("trace", line, self.real_trace, args, kwargs)

    def script(self, line, obj, optimize=None, _frames_up=0, _rcb=None, **kwargs):
        # script() resolves a class's names from its caller's frame: skip the three frames
        # between the user's call and the real script() (`call`, this, `_torchscript`).
        return self._torchscript("script", line, self.real_script,
                                 (obj, optimize, _frames_up + 3, _rcb), kwargs)

    def _torchscript(self, kind, line, real, args, kwargs):
        with warnings.catch_warnings(record=True) as caught:
            program = real(*args, **kwargs)
        for w in caught:  # shown as they would have been without torchbolt
            warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)
        if not hasattr(program, "inlined_graph"):  # a scripted class, dict or list
            return program
        self.writer.emit("torchscript", None, None, index=self._next("torchscript"), line=line,
                         kind=kind,
                         stages={"torchscript_graph": str(program.inlined_graph),
                                 "torchscript_code": program.code},
                         warnings=[{"category": w.category.__name__, "message": str(w.message),
                                    "line": w.lineno if w.filename == self.user_file else None}
                                   for w in caught])
        return program

    @contextlib.contextmanager
    def lowering(self, compile_id: str | None = None):
        """A precompile's compile: its id (a new one unless given), and the session's writer
        puts what is recorded with no compile id under it until it ends."""
        compile_id = compile_id or compile_name(self._next("precompile"))
        writer = self.session.writer
        self.session.writer = _CompileWriter(writer, compile_id)
        try:
            yield compile_id
        finally:
            self.session.writer = writer

    def record_source(self, compile_id: str, line, api: str, source: str) -> None:
        self.writer.emit("precompile_source", compile_id, source, line=line, api=api)

    def precompile(self, line, api, fn, *args, **kwargs):
        """torch 2.14: `torch.compiler.precompile(fn, *example_inputs)` -> (python_code, cache)."""
        with self.lowering() as compile_id:
            python_code, cache = self.real_precompile(api, fn, *args, **kwargs)
        self.record_source(compile_id, line, "torch.compiler.precompile", python_code)
        return python_code, cache

    def capture(self, line, fn, *args, **kwargs):
        """torch 2.15: `torch.compiler.precompile.capture(fn, artifact_path=..., ...)`."""
        return RecordedCapture(self.real_capture(fn, *args, **kwargs), self, line,
                               kwargs["artifact_path"])


class _CompileWriter:
    """The job's writer while a precompile runs: a record with no compile id is the
    precompile's (its lowering is no Dynamo frame, so PyTorch names no compile)."""

    def __init__(self, writer, compile_id: str):
        self.writer, self.compile_id = writer, compile_id

    def emit(self, name, compile_id=None, payload=None, /, **meta) -> None:
        self.writer.emit(name, compile_id or self.compile_id, payload, **meta)


class RecordedCapture:
    """A torch 2.15 precompile capture as the script uses it (`with`, one call, `save()`): the
    real capture does the work; its call is the compile, and the source it writes to
    `artifact_path` (at the block's end or on `save()`) is recorded once."""

    def __init__(self, real, recorder: ProgramRecorder, line, artifact_path):
        self.real, self.recorder, self.line = real, recorder, line
        self.artifact_path, self.compile_id, self.recorded = artifact_path, None, None

    def __enter__(self):
        self.real.__enter__()
        return self

    def __exit__(self, *exc):
        self.real.__exit__(*exc)
        if exc[0] is None:
            self._record()

    def __call__(self, *args, **kwargs):
        if not self.recorder.session.recording:
            return self.real(*args, **kwargs)
        with self.recorder.lowering(self.compile_id) as self.compile_id:
            return self.real(*args, **kwargs)

    def save(self) -> None:
        self.real.save()
        self._record()

    def __getattr__(self, name):
        return getattr(self.real, name)

    def _record(self) -> None:
        if self.compile_id is None:
            return
        with open(os.fspath(self.artifact_path), encoding="utf-8", newline="") as fh:
            source = fh.read()
        if source != self.recorded:
            self.recorded = source
            self.recorder.record_source(self.compile_id, self.line,
                                        "torch.compiler.precompile.capture", source)


def attach(session: CaptureSession) -> None:
    """Record the script's exported and TorchScript programs; `session.programs` is read after
    the script (whether anything was compiled) and by the AOT path (the exports it packages)."""
    session.programs = ProgramRecorder(session, session.user_file)
    session.programs.install()
