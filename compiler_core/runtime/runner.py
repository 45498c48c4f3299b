"""Runs one user script inside the worker child, with every feature's capture hook attached.

Writes records only; it never builds the result (the supervisor does, from the records, so that a
crash still yields every stage captured before it). User errors become an `error` record naming
the user's line.
"""

from __future__ import annotations

import errno
import importlib
import importlib.metadata
import platform
import sys
import traceback

import torch

from . import measure, replay_output
from .config import configure_job
from .opsets import opsets
from .session import CaptureSession
from ..errors import ErrorKind
from ..features import ATTACHMENTS
from ..options import OUTPUT_FILE_LIMIT, Options
from ..wire import RecordWriter
from ..parsers.common import last_user_line

NO_COMPILE_HINT = ("The script never called torch.compile, so there is nothing to show. "
                   "Hint: compile a function or module and call it, e.g. "
                   "`f = torch.compile(f); f(torch.randn(8, 16))`.")
# The run's long steps, as its `phase` records name them; each says which later ones this run's
# options still hold (`then`), so that a page can say what remains.
SCRIPT, TIMING = "running the script", "timing the compiled calls against eager"
AOT, VIEWS = "building and timing AOTInductor packages", "tracing the Core ATen and prims views"


def _package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "CPU"


def environment(device: str) -> dict:
    info = {"python": platform.python_version(), "torch": torch.__version__,
            "triton": _package_version("triton"), "device": device,
            "device_name": _cpu_name(), "cuda": torch.version.cuda,
            "threads": torch.get_num_threads(), "opsets": opsets()}
    if device == "cuda":
        info["device_name"] = torch.cuda.get_device_name()
    return info


class DeviceUnavailable(RuntimeError):
    """The job asked for a device this server does not have."""


def resolve_device(requested: str) -> str:
    if requested == "cpu":
        return "cpu"
    available = torch.cuda.is_available()
    if requested == "cuda" and not available:
        raise DeviceUnavailable("device 'cuda' was requested but this server has no usable GPU; "
                                "choose device 'auto' or 'cpu'")
    return "cuda" if available else "cpu"


def _kind_and_message(exc: BaseException) -> tuple[str, str]:
    """An engine-named kind (`ErrorKind`) and message, else the exception's own name."""
    if isinstance(exc, SystemExit):
        return ErrorKind.SYSTEM_EXIT.value, f"script called sys.exit({exc.code!r})"
    if isinstance(exc, DeviceUnavailable):
        return ErrorKind.DEVICE_UNAVAILABLE.value, str(exc)
    if isinstance(exc, OSError) and exc.errno == errno.EFBIG:
        return ErrorKind.OUTPUT_LIMIT.value, (f"the script wrote more than "
                                              f"{OUTPUT_FILE_LIMIT // 2**20} MB to its output "
                                              "(or a file); the rest was dropped")
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return ErrorKind.DISK_LIMIT.value, ("the script filled the job's disk space (its folder, "
                                            "/tmp and /dev/shm share one size limit)")
    return type(exc).__name__, str(exc).strip()[:4000]


def describe_error(exc: BaseException, user_file: str) -> dict:
    """Type, message and the user's line; the traceback keeps the user's frames only."""
    if isinstance(exc, SyntaxError) and exc.filename == user_file:
        return {"type": type(exc).__name__, "message": exc.msg, "line": exc.lineno,
                "column": exc.offset, "traceback": "".join(traceback.format_exception_only(exc))}
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == user_file]
    full = "".join(traceback.format_exception(exc))
    # Errors raised while Dynamo traces name the user frame "from user code:"; prefer that line.
    line = None
    if "from user code:" in full:
        line = last_user_line(full.rsplit("from user code:", 1)[1], user_file)
    if line is None and frames:
        line = frames[-1].lineno
    kind, message = _kind_and_message(exc)
    exception_text = "".join(traceback.format_exception_only(exc))[-4000:]
    return {"type": kind, "message": message, "line": line,
            "traceback": "".join(traceback.format_list(frames)) + exception_text}


def execute(source: str, user_file: str) -> None:
    code = compile(source, user_file, "exec")
    namespace = {"__name__": "__main__", "__file__": user_file, "__builtins__": __builtins__}
    sys.argv = [user_file]
    exec(code, namespace)


def attach_features(session: CaptureSession) -> None:
    """Call every feature's runtime hook ("runtime.module:function", relative to the
    compiler_core package) with the session, in the registry's order: a later hook may read what
    an earlier one stored on the session (`aoti` reads `programs` and `compiled`)."""
    package = __package__.rpartition(".")[0]
    for target in ATTACHMENTS:
        module, function = target.split(":")
        getattr(importlib.import_module(f"{package}.{module}"), function)(session)


def phase(writer: RecordWriter, options: Options, step: str) -> None:
    later = [name for name, on in ((TIMING, options.measure), (AOT, options.aot),
                                   (VIEWS, options.views)) if on]
    writer.emit("phase", None, None, step=step,
                then=later[later.index(step) + 1:] if step in later else later)


def run_job(source: str, user_file: str, options: Options, writer: RecordWriter,
            timing_lock_fd: int | None = None) -> None:
    """Run the script; every outcome ends with a `run_end` record unless the process dies.
    `timing_lock_fd`: a lock file's descriptor held (flock) for the timings only."""
    session = None
    try:
        device = resolve_device(options.device)
        writer.emit("environment", None, None, **environment(device))
        note = configure_job(device, source, options.measure)
        if note:
            writer.emit("note", None, None, text=note)
        session = CaptureSession(writer, user_file, options, device)
        session.attach()
        attach_features(session)
        phase(writer, options, SCRIPT)
        try:
            execute(source, user_file)
        except SystemExit as exc:
            if exc.code not in (None, 0):
                raise
        session.compiled.remove_hooks()
        if not session.compiled.callables and not session.programs.recorded:
            writer.emit("error", None, None, **ErrorKind.NO_COMPILE.error(NO_COMPILE_HINT))
        else:
            for entry in session.compiled.callables:
                if not entry.signatures:
                    writer.emit("note", None, None, text=f"torch.compile({entry.name}) was never "
                                "called, so it compiled nothing: call the compiled callable.")
            if options.measure:
                phase(writer, options, TIMING)
            with replay_output.set_aside(writer):
                measure.after_script(session.compiled, session, device,
                                     preview=options.gpu_preview, timings=options.measure,
                                     timing_lock_fd=timing_lock_fd)
            if options.aot or (options.measure and session.aoti.packages):
                phase(writer, options, AOT)
                session.aoti.after_script(build=options.aot,
                                          measure=options.aot or options.measure)
    except BaseException as exc:  # the user's error is data in the result
        writer.emit("error", None, None, **describe_error(exc, user_file))
    finally:
        if session is not None and options.views:
            phase(writer, options, VIEWS)
            with replay_output.set_aside(writer):
                session.emit_views()  # last: every stage PyTorch produced is recorded first
        sys.stdout.flush()
        sys.stderr.flush()
        writer.emit("run_end")
