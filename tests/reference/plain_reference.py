"""What PyTorch itself reports about a script, in a plain process: the independent reference the
corpus tests hold torchbolt's result to (tests/test_reference_corpus.py).

Run as `python plain_reference.py OUT.json SCRIPT.py...`: each script runs in this one process
(`torch._dynamo.reset()` and its configs restored between scripts), with no torchbolt code and
never the structured trace (`torch.__trace`) that torchbolt reads. What is recorded, and from
which of PyTorch's own capture points (torch 2.11-2.15):

- `compiles`: the compile ids of every frame compile, from `torch._dynamo.callback.
  on_compile_start` callbacks (PyTorch's public compile callbacks), and of each compile Dynamo
  refused at the recompile limit (`limit_hits`: its warning "torch._dynamo hit
  config.recompile_limit", logged under that compile's id);
- `graphs`: the compile ids whose graph reached the backend: `torch.compile`'s backend is wrapped
  (through `torch._dynamo.optimize`, which `torch.compile` calls) by one that notes
  `CompileContext.current_compile_id()` and returns the backend's callable wrapped to note each
  run of it. `unique_graphs` is `counters["stats"]["unique_graphs"]`, Dynamo's own count of them;
- `breaks`: one per record of the `graph_breaks` logging artifact (`torch._logging.set_logs(
  graph_breaks=True)`), with the `gb_type` of the `Unsupported` exception being logged (the
  record's exc_info, else the exception held by the frame that logs it) and the script's last
  line in that exception's user stack (`real_stack`);
- `recompiles`: one per record of the `recompiles` artifact, with the compile id it starts and
  the first line of each guard failure it lists (`0/0: tensor 'x' size mismatch ...`);
- `calls`: one per call of a `torch.compile`d callable made outside a compiled region, in order:
  the compile ids whose compile started during it (`compiled`), the graphs that ran during it
  (`ran`; "eager" when none did), the Dynamo error that escaped it (`error`: its type, gb_type
  and line). A compile or a graph run is the innermost open call's.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import logging
import re
import runpy
import sys
import traceback

import torch
import torch._dynamo
import torch._inductor.config
from torch._dynamo.exc import TorchDynamoException, Unsupported, UserError
from torch._dynamo.utils import counters
from torch._guards import CompileContext

# A guard failure's first line names the cache entry that failed: "- 0/0: tensor 'x' ...".
FAILED_ENTRY = re.compile(r"\d+/\d+: ")
# Dynamo's warning when a frame reaches its recompile limit (it then runs the frame eagerly).
LIMIT_HIT = "torch._dynamo hit config."


def compile_id_now() -> str | None:
    cid = CompileContext.current_compile_id()
    return None if cid is None else f"{cid.frame_id}/{cid.frame_compile_id}"


class Observer:
    """What PyTorch reports while one script runs."""

    def __init__(self, script: str):
        self.script = script
        self.graphs: list[str] = []
        self.compiles: list[str] = []
        self.breaks: list[dict] = []
        self.recompiles: list[dict] = []
        self.limit_hits: list[str] = []  # compile ids Dynamo refused: past the recompile limit
        self.calls: list[dict] = []
        self.open: list[dict] = []  # calls under way, innermost last

    def compile_started(self, compile_id: str) -> None:
        """Noted once: a compile that restarts its analysis starts again under the same id."""
        if compile_id in self.compiles:
            return
        self.compiles.append(compile_id)
        if self.open:
            self.open[-1]["compiled"].append(compile_id)

    def graph_ran(self, compile_id: str) -> None:
        if self.open:
            self.open[-1]["ran"].append(compile_id)

    def script_line(self, exc: BaseException | None) -> int | None:
        frames = [f for f in getattr(exc, "real_stack", None) or [] if f.filename == self.script]
        return frames[-1].lineno if frames else None

    def begin(self, index: int) -> dict:
        call = {"index": index, "compiled": [], "ran": [], "error": None}
        self.calls.append(call)
        self.open.append(call)
        return call

    def call(self, compiled, index: int, args, kwargs):
        """`compiled(*args, **kwargs)` as call number `index`, noted."""
        call = self.begin(index)
        try:
            return compiled(*args, **kwargs)
        except TorchDynamoException as e:
            call["error"] = {"type": type(e).__name__, "gb_type": getattr(e, "gb_type", None),
                             "line": self.script_line(e)}
            raise
        finally:
            self.open.pop()


class RecordingBackend:
    """A `torch.compile` backend that notes each graph it compiles and each run of it."""

    SETTINGS = ("compiler_name", "backend_ctx_ctor", "get_compiler_config", "reset")

    def __init__(self, inner, observer: Observer):
        self.inner, self.observer = inner, observer
        for name in self.SETTINGS:  # what Dynamo asks a backend (no __getattr__: that crashed
            if hasattr(inner, name):  # Dynamo's C frame evaluation in torch 2.13)
                setattr(self, name, getattr(inner, name))

    def __call__(self, gm, example_inputs, **kwargs):
        compile_id = compile_id_now()
        self.observer.graphs.append(compile_id)
        compiled = self.inner(gm, example_inputs, **kwargs)

        def run(*args, **kw):
            self.observer.graph_ran(compile_id)
            return compiled(*args, **kw)
        if hasattr(compiled, "_boxed_call"):
            run._boxed_call = compiled._boxed_call
        return run


class LogTap(logging.Handler):
    """Each record of the `graph_breaks` and `recompiles` artifacts."""

    def __init__(self, observer: Observer):
        super().__init__(logging.DEBUG)
        self.observer = observer

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith(LIMIT_HIT):
            self.observer.limit_hits.append(compile_id_now())
        elif record.name.endswith(".__graph_breaks"):
            exc = record.exc_info[1] if record.exc_info else logged_exception()
            self.observer.breaks.append({
                "gb_type": getattr(exc, "gb_type", None) or (type(exc).__name__ if exc else None),
                "line": self.observer.script_line(exc)})
        elif record.name.endswith(".__recompiles"):
            lines = [line.strip()[2:] for line in record.getMessage().splitlines()]
            self.observer.recompiles.append({"compile_id": compile_id_now(), "reasons": [
                line for line in lines if FAILED_ENTRY.match(line)]})


def logged_exception() -> BaseException | None:
    """The graph break being logged: the `Unsupported` (or `UserError`) a frame of the logging
    call holds (`log_graph_break(..., exc)`), nearest first."""
    frame = sys._getframe(2)
    while frame is not None:
        for value in frame.f_locals.values():
            if isinstance(value, (Unsupported, UserError)):
                return value
        frame = frame.f_back
    return None


def recording_compile(real_compile, observer: Observer):
    """`torch.compile` that notes each call of what it returns (not those made while Dynamo
    traces: those it inlines)."""
    counter = iter(range(10**9))

    def compile_(model=None, **kwargs):
        if model is None:
            return lambda fn: compile_(fn, **kwargs)
        compiled = real_compile(model, **kwargs)
        if isinstance(compiled, torch.nn.Module):  # an OptimizedModule: its compiled forward
            compiled.forward = recorded(compiled.forward)
            return compiled
        return recorded(compiled)

    def recorded(compiled):
        @functools.wraps(compiled)
        def call(*args, **kw):
            if torch.compiler.is_compiling():
                return compiled(*args, **kw)
            return observer.call(compiled, next(counter), args, kw)
        return call
    return compile_


def observe(script: str) -> dict:
    """Runs `script` (its stdout discarded) and returns what PyTorch reported."""
    observer = Observer(script)
    real_optimize = torch._dynamo.optimize

    def optimize(*args, backend="inductor", **kwargs):
        if isinstance(backend, str):
            backend = torch._dynamo.lookup_backend(backend)
        return real_optimize(*args, backend=RecordingBackend(backend, observer), **kwargs)

    tap = LogTap(observer)
    loggers = [logging.getLogger(name) for name in
               torch._logging._internal.log_registry.get_artifact_log_qnames()
               if name.endswith((".__graph_breaks", ".__recompiles"))]
    loggers.append(logging.getLogger("torch._dynamo.convert_frame"))  # the limit's warning
    configs = [(c, c.get_config_copy()) for c in (torch._dynamo.config, torch._inductor.config)]
    torch._dynamo.reset()
    counters.clear()
    start = torch._dynamo.callback.on_compile_start(lambda args: observer.compile_started(
        args.compile_id))
    error = None
    for log in loggers:
        log.addHandler(tap)
    real_compile = torch.compile
    torch.compile, torch._dynamo.optimize = recording_compile(real_compile, observer), optimize
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(script, run_name="__main__")
    except BaseException:  # noqa: BLE001 - the script's own error is part of the report
        error = traceback.format_exc(limit=-3)
    finally:
        torch.compile, torch._dynamo.optimize = real_compile, real_optimize
        for log in loggers:
            log.removeHandler(tap)
        torch._dynamo.callback.callback_handler.remove_start_callback(start)
        for config, saved in configs:
            for key, value in saved.items():
                if getattr(config, key) != value:
                    setattr(config, key, value)
    for call in observer.calls:
        call["ran"] = call["ran"] or "eager"
    compiles = observer.compiles + [c for c in observer.limit_hits if c not in observer.compiles]
    report = {"graphs": observer.graphs, "compiles": compiles,
              "unique_graphs": counters["stats"]["unique_graphs"], "breaks": observer.breaks,
              "recompiles": observer.recompiles, "limit_hits": observer.limit_hits,
              "calls": observer.calls, "error": error}
    torch._dynamo.reset()
    return report


def main(out: str, scripts: list[str]) -> None:
    torch._logging.set_logs(graph_breaks=True, recompiles=True)
    reports = {script: observe(script) for script in scripts}
    with open(out, "w") as f:
        json.dump(reports, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
