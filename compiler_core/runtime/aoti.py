"""AOTInductor beside torch.compile: the package of each ExportedProgram the script made.

A package comes from `torch._inductor.aoti_compile_and_package`, called either by the script
itself (recorded as it happens: the call is wrapped, nothing is built twice) or, with the `aot`
option, by torchbolt after the script for every export that has none, into the job's own
temporary folder. One `aoti_package` record per package: the export it came from, who built
it, the C++ compiler, the measured build time, the package's files and sizes, and the code the
build generated. After the script (with `aot` or `measure` on), one `aoti_timing` record per
package: loading it (`aoti_load_package`), its first call on the export's example inputs, and
the first call of a fresh `torch.compile(ep.module())` in the same job, the JIT path's cost.

The code comes from PyTorch's own structured trace: AOTInductor logs the C++ wrapper and kernel
sources it compiles as `graph_dump` entries `inductor_aot_wrapper_code` and
`inductor_aot_kernel_code` (`AotCodeCompiler.compile`, torch 2.11-2.13), without a compile id,
followed by Inductor's provenance artifacts; a handler collects them while one build runs, and
the capture's line owners (`line_owners`) give each kernel line its FX node. On CUDA the Triton
kernels' sources are in the wrapper, as comments beside their launchers (torch 2.11 on the H200).

The C++ compiler is chosen, not left to the environment: on the H200 image `CXX` names
`/opt/gcc/bin/g++`, a shell script around another g++, and AOTInductor's build segfaulted with
it (torch 2.11) while `/usr/bin/g++` worked. So `CXX` is used when it is a real binary, else the
first `g++` binary on PATH; the choice goes to the build as Inductor's `cpp.cxx` (that build's
config only) and into the record. The build also gets `aot_inductor.precompile_headers` off:
Inductor keeps precompiled headers in its default cache folder, which in a sandboxed CPU job is
the warm zygote's, read-only (the build failed writing there), and a header built per job costs
more than it saves on one package (tiny model, this 2-core CPU: 50 s with the header built, 45 s
without). And `cpp.enable_kernel_profile`, which torchbolt turns on for its CPU timings, is off
for the package. What torchbolt adds is recorded (`configs`); a value the caller passed is kept.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import subprocess
import tempfile
import time
import zipfile

import torch
import torch._inductor

from .callables import user_line
from .session import CaptureSession

AOT_CODE = {"inductor_aot_wrapper_code": "wrapper", "inductor_aot_kernel_code": "kernels"}
PROVENANCE = {"inductor_provenance_tracking_node_mappings": "node_mappings",
              "inductor_provenance_tracking_kernel_stack_traces": "stacks"}
PACKAGE_FILES = 500  # entries of a package's file list recorded (a big CUDA model has hundreds)


class BuildLog(logging.Handler):
    """What one AOTInductor build logs to the structured trace: its code and provenance."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.code: dict[str, str] = {}
        self.provenance: dict[str, str] = {}

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if not isinstance(metadata, dict):
            return
        entry = metadata.get("graph_dump") or metadata.get("artifact")
        name = entry.get("name") if isinstance(entry, dict) else None
        payload = getattr(record, "payload", None) or ""
        if name in AOT_CODE:
            self.code[AOT_CODE[name]] = payload
        elif name in PROVENANCE:
            self.provenance[PROVENANCE[name]] = payload


@contextlib.contextmanager
def build_log():
    from torch._logging._internal import trace_log
    handler = BuildLog()
    trace_log.addHandler(handler)
    try:
        yield handler
    finally:
        trace_log.removeHandler(handler)


def _is_script(path: str) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == b"#!"


def choose_compiler() -> dict:
    """`CXX` when it names a real binary, else the first `g++` binary on PATH; `path` None when
    there is none (then Inductor's own search decides). `skipped`: the scripts passed over."""
    named = os.environ.get("CXX")
    candidates = ([named] if named else []) + [
        os.path.join(folder, "g++") for folder in os.environ.get("PATH", "").split(os.pathsep)
        if folder]
    skipped = []
    for candidate in dict.fromkeys(candidates):
        path = shutil.which(candidate)
        if path is None or path in skipped:
            continue
        if _is_script(path):
            skipped.append(path)
            continue
        return {"path": path, "version": _version(path), "skipped": skipped}
    return {"path": None, "version": None, "skipped": skipped}


def _version(path: str) -> str | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.split("\n", 1)[0][:200] or None


def package_files(package) -> list[dict]:
    """Each file in the package (a .pt2 zip: a path or a seekable buffer) with its size."""
    position = package.tell() if hasattr(package, "tell") else None
    try:
        with zipfile.ZipFile(package) as archive:
            return [{"path": info.filename, "bytes": info.file_size}
                    for info in archive.infolist() if not info.is_dir()][:PACKAGE_FILES]
    finally:
        if position is not None:
            package.seek(position)


def _synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _timed_call(fn, args, kwargs, device: str) -> float:
    start = time.perf_counter()
    fn(*args, **kwargs)
    _synchronize(device)
    return time.perf_counter() - start


class AotiRecorder:
    """Installs itself as `torch._inductor.aoti_compile_and_package`; builds and times the
    packages after the script. `programs`: the ProgramRecorder whose exports it packages;
    `real_compile`: the real `torch.compile`, for the JIT's first call."""

    def __init__(self, session: CaptureSession, programs, device: str, real_compile):
        self.session, self.writer, self.programs = session, session.writer, programs
        self.device, self.real_compile = device, real_compile
        self.real_build = torch._inductor.aoti_compile_and_package
        self.packages: dict[int, object] = {}  # export index -> its package (path or buffer)
        self.depth = 0

    @functools.cached_property
    def compiler(self) -> dict:
        """Chosen at the first build (a job without one runs no `g++ --version`)."""
        return choose_compiler()

    def install(self) -> None:
        def aoti_compile_and_package(exported_program, *args, **kwargs):
            if self.depth or not self.session.recording:
                return self.real_build(exported_program, *args, **kwargs)
            line = user_line(self.session.user_file)
            self.depth += 1
            try:
                return self._build(exported_program, "script", line, args, kwargs)
            finally:
                self.depth -= 1
        torch._inductor.aoti_compile_and_package = aoti_compile_and_package

    def _configs(self, given: dict | None) -> tuple[dict, dict, dict]:
        """The build's Inductor configs, what torchbolt added to them (where the caller named
        no value), and the compiler as recorded."""
        added = {}
        if self.compiler["path"]:
            added["cpp.cxx"] = (self.compiler["path"],)
        if hasattr(torch._inductor.config.aot_inductor, "precompile_headers"):
            added["aot_inductor.precompile_headers"] = False  # see the module's docstring
        if torch._inductor.config.cpp.enable_kernel_profile:  # torchbolt's, for its timings:
            added["cpp.enable_kernel_profile"] = False  # the package is as a plain build makes it
        added = {key: value for key, value in added.items() if key not in (given or {})}
        configs = {**(given or {}), **added}
        if "cpp.cxx" not in added and "cpp.cxx" in configs:
            return configs, added, {"path": str(configs["cpp.cxx"])[:500], "version": None,
                                    "skipped": [], "chosen_by": "script"}
        return configs, added, {**self.compiler,
                                "chosen_by": "torchbolt" if self.compiler["path"] else "torch"}

    def _build(self, program, built_by: str, line, args=(), kwargs=None):
        """Build the package (the AOT compile records nothing as a compile of the script's),
        and record it against the export it came from."""
        kwargs = dict(kwargs or {})
        kwargs["inductor_configs"], added, compiler = self._configs(
            kwargs.get("inductor_configs"))
        try:
            with build_log() as log, self.session.paused():
                start = time.perf_counter()
                package = self.real_build(program, *args, **kwargs)
                compile_s = time.perf_counter() - start
        finally:  # the line owners of this build's kernels, none left for the next compile
            owners = self.session.line_owners.take(self.session.user_file)
        index = self.programs.index_of(program)
        if index is None:
            self.writer.emit("note", None, None, text=(
                f"The script built an AOTInductor package (line {line}) from a program that "
                "torch.export.export did not return to it here; it is not shown."))
            return package
        self.packages[index] = package
        self.writer.emit("aoti_package", None, None, export=index, built_by=built_by, line=line,
                         device=self.device, compiler=compiler, configs=added,
                         compile_s=round(compile_s, 4),
                         files=package_files(package), code=log.code,
                         provenance=log.provenance, kernel_lines=owners)
        return package

    def after_script(self, build: bool, measure: bool) -> None:
        """With `build`, package every export the script did not package; with `measure`, time
        each package. One export failing costs that export's AOT part (a `stage_error`)."""
        for index, program in enumerate(self.programs.exported):
            try:
                if build and index not in self.packages:
                    path = os.path.join(tempfile.mkdtemp(prefix="aoti-"),  # the job's own /tmp
                                        f"export-{index}.pt2")
                    self._build(program, "torchbolt", None, kwargs={"package_path": path})
                if measure and index in self.packages:
                    self._measure(index, program)
            except Exception as exc:  # a program AOTInductor cannot build, a failed C++ build
                self.writer.emit("stage_error", None, None, stage=f"aoti export-{index}",
                                 message=f"{type(exc).__name__}: {exc}"[:2000])

    def _measure(self, index: int, program) -> None:
        """Load and first call of the package; first call of a fresh torch.compile of the
        same module (its compile included: that is the JIT's start-up cost)."""
        args, kwargs = program.example_inputs
        with self.session.paused():
            start = time.perf_counter()
            loaded = torch._inductor.aoti_load_package(self.packages[index])
            load_s = time.perf_counter() - start
            first_call_s = _timed_call(loaded, args, kwargs, self.device)
            jit = self.real_compile(program.module())
            jit_first_call_s = _timed_call(jit, args, kwargs, self.device)
        self.writer.emit("aoti_timing", None, None, export=index, load_s=round(load_s, 6),
                         first_call_s=round(first_call_s, 6),
                         jit_first_call_s=round(jit_first_call_s, 4))


def attach(session: CaptureSession) -> None:
    """Record the script's AOTInductor builds; after `programs` and `callables`, whose recorders
    it reads (the exports it packages, the real `torch.compile` for the JIT's first call)."""
    session.aoti = AotiRecorder(session, session.programs, session.device,
                                session.compiled.real_compile)
    session.aoti.install()
