"""Triton kernels as compiled: their lowering stages and launch metadata (worker child side).

Each job has its own Triton and Inductor cache directories (set per job by the worker), where
Triton writes one folder per compiled kernel: `NAME.source .ttir .ttgir .llir .ptx .cubin .json`
(a Gluon kernel, `@gluon.jit`: `.glir`, its Gluon IR, in place of `.ttir` from Triton 3.9 on;
Triton 3.8 writes no Gluon IR, its first stage being the TTGIR the Gluon passes make).
After the script ran, every Inductor Triton kernel (a `CachingAutotuner` in a loaded output module)
is matched to the folder of the config it launches with, and one `triton_kernel` record carries its
texts, SASS (disassembled with the `nvdisasm` Triton ships) and launch metadata. Autotuning is
recorded as it happens: `triton_autotune` (configs of one kernel benchmarked at run time);
`max-autotune` template choices are recorded on every device (`runtime.hooks.autotune`).

`compiler_core.runtime.gpu.preview` reuses `kernel_record` for kernels compiled for a virtual GPU.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from ..session import CaptureSession

IR_SUFFIXES = ("source", "glir", "ttir", "ttgir", "llir", "ptx")
SASS_ADDRESS = re.compile(r"/\*(?P<address>[0-9a-f]{4,})\*/")
SASS_FILE_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')
RESOURCE_USAGE = re.compile(r"REG:(?P<regs>\d+) STACK:(?P<stack>\d+) SHARED:(?P<shared>\d+) "
                            r"LOCAL:(?P<local>\d+)")


def cache_roots() -> list[str]:
    """Where this job's compiled kernels are: the job's Triton cache, and the Triton caches of
    the fresh per-compile folders Inductor makes in the job's Inductor cache (with
    `force_disable_caches` it points `TRITON_CACHE_DIR` there while it compiles)."""
    roots = [os.environ.get("TRITON_CACHE_DIR", "")]
    inductor = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "")
    if os.path.isdir(inductor):
        roots += [os.path.join(entry.path, "triton") for entry in os.scandir(inductor)]
    return [root for root in roots if os.path.isdir(root)]


def config_dict(config) -> dict:
    """A `triton.Config` as plain data: block sizes, warps, stages."""
    out = {**config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages}
    if getattr(config, "maxnreg", None):
        out["maxnreg"] = config.maxnreg
    return out


def _cuda_tool(name: str) -> str | None:
    import triton
    bundled = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)
    return bundled if os.path.exists(bundled) else shutil.which(name)


def sass_with_lines(listing: str) -> tuple[str, list]:
    """nvdisasm's `-gi` listing as shown (its line-table comments and blank lines dropped), and
    for each shown line its line of the kernel's file: a `//## File "F", line N [inlined at "G",
    line M ...]` comment applies to the instructions after it; an inlined line is taken where it
    was inlined in the function's own file (the first named); null for a line without one."""
    shown, located, current, function_file = [], [], None, None
    for line in listing.splitlines():
        if "//##" in line:
            places = SASS_FILE_LINE.findall(line)
            function_file = function_file or places[0][0]
            own = [int(n) for f, n in places if f == function_file]
            current = own[-1] if own else None
        elif line.strip():
            shown.append(line.rstrip())
            located.append(current if SASS_ADDRESS.search(line) else None)
    return "\n".join(shown), located


def sass_and_resources(cubin_path: str) -> tuple[str | None, dict, list]:
    """SASS and its line table from one `nvdisasm -c -gi -ndf` (Triton's cubins carry
    `-lineinfo`), and the resource usage `cuobjdump` reports; the two runs at once.
    `-ndf` skips nvdisasm's dataflow analysis, which changes nothing shown here and took a
    third of its time (0.25 against 0.37 s a small kernel, on the H200 machine and here);
    `cuobjdump -sass` runs nvdisasm itself and took 0.40 s."""
    tools = [_cuda_tool("nvdisasm"), _cuda_tool("cuobjdump")]
    if tools[0] is None or not os.path.exists(cubin_path):
        return None, {}, []
    commands = [[tools[0], "-c", "-gi", "-ndf", cubin_path]]
    if tools[1]:
        commands.append([tools[1], "--dump-resource-usage", cubin_path])
    runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True) for command in commands]
    listing, usage_text = [*(run.communicate(timeout=60)[0] for run in runs), ""][:2]
    usage = RESOURCE_USAGE.search(usage_text)
    resources = {k: int(v) for k, v in usage.groupdict().items()} if usage else {}
    sass, located = sass_with_lines(listing)
    return sass or None, resources, located


def cache_index() -> dict[str, str]:
    """Folder of each compiled kernel of the job, keyed by folder name and by Triton's hash."""
    index: dict[str, str] = {}
    for root in cache_roots():
        for folder in os.scandir(root):
            index[folder.name] = folder.path
            for entry in os.scandir(folder.path):
                if entry.name.endswith(".json") and not entry.name.startswith("__grp__"):
                    with open(entry.path, encoding="utf-8") as fh:
                        index[json.load(fh).get("hash", "")] = folder.path
    return index


def read_folder(folder: str, name: str) -> dict:
    """The lowering stages of one compiled kernel, its Triton metadata and SASS."""
    stages = {}
    for suffix in IR_SUFFIXES:
        path = os.path.join(folder, f"{name}.{suffix}")
        if os.path.exists(path):
            with open(path, encoding="utf-8", errors="replace") as fh:
                stages[suffix] = fh.read()
    with open(os.path.join(folder, f"{name}.json"), encoding="utf-8") as fh:
        metadata = json.load(fh)
    sass, resources, sass_lines = sass_and_resources(os.path.join(folder, f"{name}.cubin"))
    if sass:
        stages["sass"] = sass
    return {"stages": stages, "metadata": metadata, "resources": resources,
            "sass_lines": sass_lines}


def grid_expr(autotuner, config) -> list[str] | None:
    """The launch grid as Inductor computes it, e.g. `['-(xnumel // -1024)', '1', '1']`."""
    try:
        from torch._inductor.runtime.triton_heuristics import GridExpr
        grid = GridExpr.from_meta(autotuner.inductor_meta, config)
        return [str(g) for g in (grid.x_grid, grid.y_grid, grid.z_grid)]
    except Exception:  # older grid code or a kernel kind without a grid type: leave it out
        return None


def kernel_record(autotuner, config, folder: str | None, observed: dict) -> dict:
    """Everything shown for one kernel: launch metadata, Inductor's estimates, its stages.

    `observed` holds what the launcher measured when the kernel was loaded on a device
    (registers, spills, shared memory) and where it came from; it overrides the static figures.
    """
    name = autotuner.fn.__name__
    info = read_folder(folder, name) if folder else {"stages": {}, "metadata": {}, "resources": {},
                                                     "sass_lines": []}
    launch = {"config": config_dict(config), "grid": grid_expr(autotuner, config),
              "shared_bytes": info["metadata"].get("shared"),
              "registers": info["resources"].get("regs"),
              "local_bytes": info["resources"].get("local"),
              "target": info["metadata"].get("target")}
    launch.update({k: v for k, v in observed.items() if v is not None})
    return {"name": name, "launch": launch, "stages": info["stages"],
            "sass_lines": info["sass_lines"],
            "num_gb": autotuner.inductor_meta.get("kernel_num_gb"),
            "flop": autotuner.inductor_meta.get("kernel_flop"),
            "is_backward": bool(getattr(autotuner, "is_backward", False))}


WARM_UP_KERNELS: frozenset[int] = frozenset()  # ids of the kernels the process's warm-up made


def note_warm_up_kernels() -> None:
    global WARM_UP_KERNELS
    WARM_UP_KERNELS = frozenset(id(k) for k in loaded_autotuners())


def loaded_autotuners():
    """Every Inductor Triton kernel alive here, found through the garbage collector (where
    Inductor keeps its modules differs across versions)."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    for value in gc.get_objects():
        # type(), not isinstance(): a dead weak proxy raises when asked for its __class__
        if issubclass(type(value), CachingAutotuner):
            yield value


def owners(output_modules: dict[str, str | None]) -> dict[int, str]:
    """id(autotuner) -> the file of the output module holding it, among `output_modules`."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    out = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and os.path.abspath(path) in output_modules:
            for value in vars(module).values():
                if issubclass(type(value), CachingAutotuner):
                    out[id(value)] = os.path.abspath(path)
    return out


def collect(session: CaptureSession):
    """Starts reading the folder of every Inductor Triton kernel that was loaded to launch
    (`nvdisasm` runs, 0.25 s a kernel on the H200 machine, go on in the background) and returns
    the function that waits for them and writes one `triton_kernel` record per kernel."""
    index, owner = cache_index(), owners(session.output_modules)
    placed, unplaced = [], 0
    for autotuner in loaded_autotuners():
        if id(autotuner) in session.kernels_before or not autotuner.launchers:
            continue
        module_file = owner.get(id(autotuner))
        compile_id = session.output_modules.get(module_file) or _compile_id(session, autotuner)
        if compile_id is None:
            unplaced += 1
        else:
            placed.append((compile_id, autotuner, module_file))

    def record(compile_id, autotuner, module_file) -> tuple[str, dict]:
        launcher = autotuner.launchers[0]  # after autotuning, the one kept
        folder = index.get(getattr(launcher, "cache_hash", None) or "")
        observed = {"registers": launcher.n_regs, "spills": launcher.n_spills,
                    "shared_bytes": launcher.shared, "module_file": module_file}
        return compile_id, kernel_record(autotuner, launcher.config, folder, observed)
    pool = ThreadPoolExecutor(max_workers=8)
    reading = [pool.submit(record, *job) for job in placed]

    def write_records() -> None:
        try:
            for future in reading:
                compile_id, meta = future.result()
                session.writer.emit("triton_kernel", compile_id, None, **meta)
        finally:
            pool.shutdown(cancel_futures=True)
        if unplaced:
            session.writer.emit("note", None, None, text=f"{unplaced} Triton kernel(s) ran but "
                                "could not be placed in a compile; their stages are not shown.")
    return write_records


def _compile_id(session: CaptureSession, autotuner) -> str | None:
    """The result's id of the compile that made the kernel (PyTorch's starts again on a reset)."""
    compile_id = getattr(autotuner, "compile_id", None)
    return session.compile_ids.of(str(compile_id)) if compile_id is not None else None


def record_autotuning(session: CaptureSession) -> None:
    """Record run-time config benchmarks as they happen."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    original = CachingAutotuner.benchmark_all_configs

    @functools.wraps(original)
    def benchmark_all_configs(self, *args, **kwargs):
        timings = original(self, *args, **kwargs)
        if not session.recording:
            return timings
        session.writer.emit("triton_autotune", _compile_id(session, self), None,
                            name=self.fn.__name__,
                            is_backward=bool(getattr(self, "is_backward", False)),
                            configs=[{"config": config_dict(launcher.config), "ms": ms,
                                      "registers": launcher.n_regs, "spills": launcher.n_spills}
                                     for launcher, ms in timings.items()])
        return timings

    CachingAutotuner.benchmark_all_configs = benchmark_all_configs
