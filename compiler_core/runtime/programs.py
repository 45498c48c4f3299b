"""`torch.export.export`, `torch.jit.trace` and `torch.jit.script` as the script sees them: the
real functions, each program they return recorded beside the compiles, so the AOT path (export)
and the older graph capture (TorchScript) can be compared with Dynamo's on the same code.

One `export` record per ExportedProgram (its text as PyTorch prints it: the graph with the
signature, the graph signature, the range constraints; and the program decomposed to Core ATen
by `run_decompositions()`), one `torchscript` record per traced or scripted function or module
(its inlined TorchScript graph and code, and the warnings the call raised, TracerWarnings
included). Only the outermost call is recorded (torch may call these itself).
"""

from __future__ import annotations

import functools
import warnings

import torch

from .callables import user_line
from .session import CaptureSession


class ProgramRecorder:
    """Installs itself as `torch.export.export`, `torch.jit.trace` and `torch.jit.script`."""

    def __init__(self, session: CaptureSession, user_file: str):
        self.session, self.writer, self.user_file = session, session.writer, user_file
        self.real_export = torch.export.export
        self.real_trace, self.real_script = torch.jit.trace, torch.jit.script
        self.counts = {"export": 0, "torchscript": 0}
        self.exported: list = []  # the ExportedPrograms recorded, by index (the AOT path's)
        self.depth = 0

    @property
    def recorded(self) -> int:
        return sum(self.counts.values())

    def install(self) -> None:
        torch.export.export = self._outermost(self.export, self.real_export)
        torch.jit.trace = self._outermost(self.trace, self.real_trace)
        torch.jit.script = self._outermost(self.script, self.real_script)

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


def attach(session: CaptureSession) -> None:
    """Record the script's exported and TorchScript programs; `session.programs` is read after
    the script (whether anything was compiled) and by the AOT path (the exports it packages)."""
    session.programs = ProgramRecorder(session, session.user_file)
    session.programs.install()
