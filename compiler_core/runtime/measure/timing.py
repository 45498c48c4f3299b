"""Measured timings: each compiled callable, eager against compiled, on the arguments it was
called with (worker child side, after the script ran).

Per recorded call (`CompileRecorder`: up to 4 argument signatures per callable):
- Inputs are fresh random tensors with the shapes, strides, dtypes and devices of the recorded
  ones (never zeros; integers stay in the recorded range so that indices stay valid).
- The grad mode is the one the script compiled for: the compiled callable is probed under
  `torch.compiler.set_stance("fail_on_recompile")`, so timing never triggers a compile. When the
  outputs require grad, each timed call runs forward and backward.
- Correctness first: compiled against eager output with a dtype-aware tolerance; eager is run
  twice, and a callable whose eager output changes between runs (state, randomness) is labelled
  not comparable. A mismatch is reported as a mismatch, never as a speed-up.
- End to end: blocks of calls timed interleaved (eager, compiled, alternating order), median and
  IQR per call, after warm-up. CPU: the host clock. GPU: CUDA events on the launching stream,
  `warm` (L2 as the previous call left it), `cold` (one call after an L2 flush of 4x its size),
  and `cudagraphs` (the callable compiled again with mode="reduce-overhead", labelled as such).
- Per kernel, from the PyTorch profiler: CPU self time of each op and C++ kernel (Inductor's
  kernel profiling on); GPU device time of each kernel with grid, block and registers, cold L2;
  bytes moved (Inductor's estimate) -> GB/s against the device's measured copy bandwidth, FLOP
  -> TFLOP/s for matmuls (Inductor's estimate, or 2*M*N*K from the op's shapes).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import tempfile
import time

import torch
from torch.utils._pytree import tree_flatten, tree_map

from .. import capture
from ...report.plots import kernel_figure, roofline_figure

TOLERANCE = {torch.float64: 1e-7, torch.float32: 1e-4, torch.float16: 1e-2,
             torch.bfloat16: 5e-2}  # on |compiled - eager|, relative to max(1, max|eager|)
BUDGET_S = {"cpu": 1.0, "cuda": 1.5}  # end-to-end timing of one series group
# One sample: calls lasting at least this long. On a GPU, long enough that the launch overhead
# of a sample's first call (exposed after the synchronize before it) is amortised: with 2 ms,
# compiled calls of ~140 us read up to 15 % slow on the H200.
BLOCK_S = {"cpu": 5e-3, "cuda": 20e-3}
MIN_BLOCKS, MAX_BLOCKS = 5, 60
PROFILED_CALLS = 10
TOTAL_BUDGET_S = 60.0
TOP_ROWS = 25
GRAD_MODES = {"grad": torch.enable_grad, "no_grad": torch.no_grad,
              "inference_mode": torch.inference_mode}
MATMUL_OPS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}


# ------------------------------------------------------------------------------------- inputs

def fresh_like(value):
    """Random values laid out like `value` (same storage size, strides, dtype, device)."""
    if not isinstance(value, torch.Tensor):
        return value
    size = value.untyped_storage().nbytes() // value.element_size()
    options = {"dtype": value.dtype, "device": value.device}
    with torch.no_grad():
        if value.dtype.is_floating_point or value.dtype.is_complex:
            base = torch.randn(size, **options)
        elif value.dtype == torch.bool:
            base = torch.rand(size, device=value.device) < 0.5
        else:
            low, high = (int(value.min()), int(value.max()) + 1) if value.numel() else (0, 1)
            base = torch.randint(low, high, (size,), **options)
        fresh = base.as_strided(value.size(), value.stride(), value.storage_offset()).detach()
    return fresh.requires_grad_(value.requires_grad)


def fresh_inputs(call: tuple[tuple, dict]) -> tuple[tuple, dict]:
    args, kwargs = call
    return tree_map(fresh_like, args), tree_map(fresh_like, kwargs)


def tensors(value) -> list[torch.Tensor]:
    return [leaf for leaf in tree_flatten(value)[0] if isinstance(leaf, torch.Tensor)]


# -------------------------------------------------------------------------------- correctness

def compare(expected, actual) -> dict:
    """Largest absolute and relative (to the largest |expected|) error over all outputs."""
    pairs = list(zip(tensors(expected), tensors(actual)))
    if len(pairs) != len(tensors(expected)) or len(pairs) != len(tensors(actual)):
        return {"ok": False, "reason": "different number of tensor outputs"}
    result = {"ok": True, "max_abs": 0.0, "max_rel": 0.0, "outputs": len(pairs), "dtypes": []}
    for e, a in pairs:
        if e.shape != a.shape or e.dtype != a.dtype:
            return {"ok": False, "reason": f"output {list(e.shape)} {e.dtype} became "
                                           f"{list(a.shape)} {a.dtype}"}
        dtype = e.dtype
        e, a = e.detach().double().cpu(), a.detach().double().cpu()
        if not torch.equal(e.isnan(), a.isnan()):
            return {"ok": False, "reason": "NaN in different places"}
        scale = float(e.nan_to_num(0, 0, 0).abs().max()) if e.numel() else 0.0
        error = float((e - a).nan_to_num(0, 0, 0).abs().max()) if e.numel() else 0.0
        tolerance = TOLERANCE.get(dtype, 0.0)
        result["max_abs"] = max(result["max_abs"], error)
        result["max_rel"] = max(result["max_rel"], error / scale if scale else error)
        result["ok"] = result["ok"] and error <= tolerance * max(1.0, scale)
        result["dtypes"].append(str(dtype).removeprefix("torch."))
    return result


# ------------------------------------------------------------------------------------- clocks

class CpuClock:
    label = "host wall clock (time.perf_counter)"

    def block(self, fn, calls: int, before=None) -> float:
        """Milliseconds per call over `calls` back-to-back calls."""
        if before:
            before()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - start) * 1e3 / calls


class CudaClock:
    label = "CUDA events on the launching stream"

    def __init__(self) -> None:
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def block(self, fn, calls: int, before=None) -> float:
        torch.cuda.synchronize()
        if before:
            before()  # enqueued before the start event: outside the timed span
        stream = torch.cuda.current_stream()
        self.start.record(stream)
        for _ in range(calls):
            fn()
        self.end.record(stream)
        self.end.synchronize()
        return self.start.elapsed_time(self.end) / calls


# --------------------------------------------------------------------------------- statistics

def summary(samples_ms: list[float]) -> dict:
    q1, median, q3 = statistics.quantiles(samples_ms, n=4, method="inclusive")
    return {"median_ms": median, "q1_ms": q1, "q3_ms": q3, "iqr_ms": q3 - q1,
            "min_ms": min(samples_ms), "samples": len(samples_ms)}


def speedup(eager: dict, compiled: dict) -> dict:
    """Median ratio, with the range its IQRs allow (eager q1 / compiled q3 .. q3 / q1)."""
    return {"median": eager["median_ms"] / compiled["median_ms"],
            "low": eager["q1_ms"] / compiled["q3_ms"], "high": eager["q3_ms"] / compiled["q1_ms"]}


def interleaved(fns: dict, clock, calls: int, blocks: int, before=None) -> dict[str, dict]:
    """Time each function in turn, alternating the order, so drift hits all alike."""
    samples = {name: [] for name in fns}
    order = list(fns)
    for i in range(blocks):
        for name in (order if i % 2 == 0 else order[::-1]):
            samples[name].append(clock.block(fns[name], calls, before))
    return {name: summary(values) for name, values in samples.items()}


def plan(fns: dict, clock, device: str) -> tuple[int, int]:
    """Calls per sample and number of samples that fit the budget."""
    per_call_s = max(clock.block(fn, 1) for fn in fns.values()) / 1e3
    calls = max(1, math.ceil(BLOCK_S[device] / max(per_call_s, 1e-7)))
    blocks = int(BUDGET_S[device] / (len(fns) * calls * max(per_call_s, 1e-7)))
    return calls, min(MAX_BLOCKS, max(MIN_BLOCKS, blocks))


# ---------------------------------------------------------------------------------- grad mode

def grad_mode_of(compiled, args, kwargs) -> str:
    """The grad mode under which the compiled callable runs without compiling again."""
    errors = []
    for name, mode in GRAD_MODES.items():
        try:
            with mode(), torch.compiler.set_stance("fail_on_recompile"):
                compiled(*args, **kwargs)
            return name
        except Exception as exc:  # a guard failed in this mode (or the call failed): next
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
    raise RuntimeError("the compiled callable would compile again under every grad mode; "
                       + " | ".join(errors)[:2000])


def caller(fn, args, kwargs, grads: list | None):
    """A no-argument call of `fn`; with `grads`, forward and backward."""
    def call():
        out = fn(*args, **kwargs)
        if grads is not None:
            torch.autograd.backward([t for t in tensors(out) if t.requires_grad], grads)
        return out
    return call


def backward_grads(eager, args, kwargs) -> list | None:
    """Output gradients when the outputs require grad and backward runs, else None."""
    outs = [t for t in tensors(eager(*args, **kwargs)) if t.requires_grad]
    if not outs:
        return None
    grads = [fresh_like(t.detach()) for t in outs]
    try:
        torch.autograd.backward(outs, grads)
    except RuntimeError:  # e.g. the callable ran backward itself and freed the graph
        return None
    return grads


# -------------------------------------------------------------------------------- per kernel

def _kernel_name(name: str) -> str:
    """Inductor's C++ kernels are profiled as `graph_N_cpp_fused_...`."""
    head, sep, rest = name.partition("_cpp_fused")
    return "cpp_fused" + rest if sep and head.startswith("graph_") else name


def _kind(name: str, category: str) -> str:
    if name.startswith("triton_"):
        return "triton"
    if name.startswith("cpp_fused"):
        return "cpp"
    if category in ("gpu_memcpy", "gpu_memset"):
        return category.removeprefix("gpu_")
    if category == "kernel":
        return "library"
    return "aten" if name.startswith("aten::") else "framework"


def _rows(groups: dict[str, list[dict]], calls: int, robust: bool) -> list[dict]:
    """One row per kernel name. `robust`: time per call from the median launch (CPU, where
    other processes add outliers) rather than the sum of all launches (GPU device times)."""
    rows = []
    for name, events in groups.items():
        durations = [e["us"] for e in events]
        first, median = events[0], statistics.median(durations)
        launches = len(events) / calls
        row = {"name": name, "kind": first["kind"], "launches": launches,
               "us_per_call": median * launches if robust else sum(durations) / calls,
               "us_per_launch": median,
               **{k: v for k, v in first.items() if k not in ("us", "kind", "flop")}}
        flop = sum(e.get("flop", 0) for e in events) / calls
        if flop:
            row["flop_per_call"] = flop
        rows.append(row)
    rows.sort(key=lambda r: -r["us_per_call"])
    if len(rows) > TOP_ROWS:
        rest = rows[TOP_ROWS:]
        rows = rows[:TOP_ROWS] + [{"name": f"{len(rest)} others", "kind": "other",
                                   "launches": sum(r["launches"] for r in rest),
                                   "us_per_call": sum(r["us_per_call"] for r in rest),
                                   "us_per_launch": None}]
    return rows


def profile_cpu(fn, calls: int) -> list[dict]:
    """Self CPU time of every op and C++ kernel the call runs."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(calls):
            fn()
    groups: dict[str, list[dict]] = {}
    for event in prof.events():
        if event.self_cpu_time_total > 0 and not event.name.startswith("ProfilerStep"):
            name = _kernel_name(event.name)
            groups.setdefault(name, []).append({"us": event.self_cpu_time_total,
                                                "kind": _kind(name, "cpu_op")})
    return _rows(groups, calls, robust=True)


def _matmul_flop(op: dict | None) -> float:
    """2*M*N*K (times batch) from a matmul op's recorded input shapes."""
    if not op or op.get("name") not in MATMUL_OPS:
        return 0.0
    dims = [d for d in op.get("args", {}).get("Input Dims", []) if d]
    a, b = dims[-2], dims[-1]
    return 2.0 * math.prod(a) * b[-1]


def profile_cuda(fn, calls: int, flush) -> list[dict]:
    """Device time of every kernel, memcpy and memset the call runs, each after an L2 flush."""
    from ..gpu.l2_flush import NAME
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities, record_shapes=True) as prof:
        for _ in range(calls):
            flush()
            fn()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as fh:
            events = json.load(fh)["traceEvents"]
    ops = {e["args"]["External id"]: e for e in events
           if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
    groups: dict[str, list[dict]] = {}
    counted: set = set()
    for e in events:
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset") or e["name"] == NAME:
            continue
        args, op_id = e.get("args", {}), e.get("args", {}).get("External id")
        entry = {"us": float(e.get("dur", 0)), "kind": _kind(e["name"], e["cat"]),
                 "grid": args.get("grid"), "block": args.get("block"),
                 "registers": args.get("registers per thread"),
                 "shared_bytes": args.get("shared memory")}
        if e["cat"] == "kernel" and op_id not in counted:  # a matmul's FLOP: first kernel
            counted.add(op_id)
            entry["flop"] = _matmul_flop(ops.get(op_id))
        groups.setdefault(e["name"], []).append(entry)
    return _rows(groups, calls, robust=False)


def add_rates(rows: list[dict], estimates: dict[str, dict], peaks: dict | None) -> None:
    """Bytes (Inductor's estimate) and FLOP per call -> GB/s, TFLOP/s and % of peak."""
    for row in rows:
        estimate = estimates.get(row["name"], {})
        if estimate.get("num_gb"):
            row["gb_per_call"] = estimate["num_gb"] * row["launches"]
        if estimate.get("flop"):
            row["flop_per_call"] = estimate["flop"] * row["launches"]
        seconds = row["us_per_call"] * 1e-6
        if row.get("gb_per_call") and seconds:
            row["gbps"] = row["gb_per_call"] / seconds
            if peaks:
                row["pct_peak_bandwidth"] = 100 * row["gbps"] / peaks["copy_gbps"]
        if row.get("flop_per_call") and seconds:
            row["tflops"] = row["flop_per_call"] / seconds / 1e12
            if peaks:
                row["pct_peak_bf16"] = 100 * row["tflops"] / peaks["bf16_tflops"]


def kernel_estimates(call) -> dict[str, dict]:
    """Bytes and FLOP per launch of each Triton kernel: Inductor's estimates (see `configure`),
    else (torch 2.11 adds none without `benchmark_kernel`) the bytes of the tensor arguments of
    its launches in one untimed call, each counted once."""
    from ..gpu.triton_kernels import loaded_autotuners
    measured = argument_bytes(call)
    return {t.fn.__name__: {"num_gb": t.inductor_meta.get("kernel_num_gb") or (
                                measured.get(t.fn.__name__, 0) / 1e9 or None),
                            "flop": t.inductor_meta.get("kernel_flop")}
            for _, t in loaded_autotuners()}


def argument_bytes(call) -> dict[str, int]:
    """Bytes of each Triton kernel's tensor arguments at its first launch during `call()`."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    seen: dict[str, int] = {}
    original = CachingAutotuner.run

    def run(self, *args, **kwargs):
        seen.setdefault(self.fn.__name__, sum(a.numel() * a.element_size() for a in args
                                              if isinstance(a, torch.Tensor)))
        return original(self, *args, **kwargs)

    CachingAutotuner.run = run
    try:
        call()
    finally:
        CachingAutotuner.run = original
    return seen


def totals(rows: list[dict], e2e_ms: float | None) -> dict:
    busy_us = sum(r["us_per_call"] for r in rows)
    out = {"us_per_call": busy_us, "launches_per_call": sum(r["launches"] for r in rows)}
    if e2e_ms:
        out["busy_share"] = min(1.0, busy_us / (e2e_ms * 1e3))
    return out


# ------------------------------------------------------------------------------------- device

class Device:
    """The clock, L2 flush and peak rates of the job's device (peaks measured once, on use)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.clock = CudaClock() if kind == "cuda" else CpuClock()
        self._flush = self._peaks = None

    @property
    def flush(self):
        if self._flush is None:
            from ..gpu.l2_flush import L2Flush
            self._flush = L2Flush()
        return self._flush

    @property
    def peaks(self) -> dict | None:
        if self.kind != "cuda":
            return None
        if self._peaks is None:
            self._peaks = measure_peaks(self.clock)
        return self._peaks


def measure_peaks(clock: CudaClock) -> dict:
    """Device copy bandwidth (1 GiB) and dense bf16 matmul rate (8192^3), measured now."""
    source = torch.randn(2**28, device="cuda")
    target = torch.empty_like(source)
    copy_ms = min(clock.block(lambda: target.copy_(source), 5) for _ in range(3))
    a, b = (torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    mm_ms = min(clock.block(lambda: a @ b, 5) for _ in range(3))
    return {"copy_gbps": 2 * source.nbytes / (copy_ms * 1e-3) / 1e9,
            "bf16_tflops": 2 * 8192**3 / (mm_ms * 1e-3) / 1e12,
            "how": "measured on this device at job time: 1 GiB device copy (bytes read and "
                   "written), 8192^3 bf16 matmul on random data"}


# ----------------------------------------------------------------------------- one callable

def reduce_overhead(entry, real_compile, args, kwargs, grads):
    """The callable compiled again with CUDA graphs, warmed up (its compile is not timed)."""
    graphed = real_compile(entry.original, mode="reduce-overhead")
    call = caller(graphed, args, kwargs, grads)

    def step():
        torch.compiler.cudagraph_mark_step_begin()
        return call()
    for _ in range(3):
        step()
    return step


def end_to_end(calls: dict, device: Device, cudagraphs) -> dict:
    out = {}
    n, blocks = plan(calls, device.clock, device.kind)
    out["warm"] = {**interleaved(calls, device.clock, n, blocks), "calls_per_sample": n}
    if device.kind == "cuda":
        out["cold"] = {**interleaved(calls, device.clock, 1, blocks, before=device.flush),
                       "calls_per_sample": 1, "l2_flush_bytes": device.flush.bytes}
        if cudagraphs is not None:
            graphed = {"eager": calls["eager"], "cudagraphs": cudagraphs}
            n, blocks = plan(graphed, device.clock, device.kind)
            out["cudagraphs"] = {**interleaved(graphed, device.clock, n, blocks),
                                 "calls_per_sample": n,
                                 "label": "compiled with mode='reduce-overhead' (CUDA graphs)"}
    for series in out.values():
        compiled = series.get("compiled") or series.get("cudagraphs")
        series["speedup"] = speedup(series["eager"], compiled)
    return out


def per_kernel(calls: dict, device: Device, e2e: dict) -> dict:
    if device.kind == "cuda":
        rows = {name: profile_cuda(fn, PROFILED_CALLS, device.flush)
                for name, fn in calls.items()}
        estimates = kernel_estimates(calls["compiled"])
        for name in rows:
            add_rates(rows[name], estimates if name == "compiled" else {}, device.peaks)
        cache = ("cold: L2 flushed before each call; a kernel later in the call finds in L2 "
                 "what the kernels before it wrote, as in the real call")
    else:
        rows = {name: profile_cpu(fn, PROFILED_CALLS) for name, fn in calls.items()}
        cache = "warm (CPU)"
    basis = "cold" if device.kind == "cuda" else "warm"
    return {**rows, "calls_profiled": PROFILED_CALLS, "cache": cache,
            "totals": {name: totals(rows[name], e2e[basis][name]["median_ms"]) for name in rows}}


def check(eager_fn, compiled_fn, args, kwargs) -> dict:
    """Compiled against eager on the same inputs; eager against itself first."""
    def run(fn):
        torch.manual_seed(0)
        return fn(*tree_map(clone, args), **tree_map(clone, kwargs))
    first, second = run(eager_fn), run(eager_fn)
    if not compare(first, second)["ok"]:
        return {"ok": None, "reason": "not comparable: eager output changes from call to call "
                                      "(the callable changes state or draws random numbers)"}
    return compare(first, run(compiled_fn))


def clone(value):
    if not isinstance(value, torch.Tensor):
        return value
    return value.detach().clone().requires_grad_(value.requires_grad)


def measure_call(entry, call: tuple, device: Device, real_compile) -> dict:
    args, kwargs = fresh_inputs(call)
    grad_mode = grad_mode_of(entry.compiled, args, kwargs)
    with GRAD_MODES[grad_mode]():
        correctness = check(entry.original, entry.compiled, args, kwargs)
        grads = backward_grads(entry.original, args, kwargs) if grad_mode == "grad" else None
        calls = {"eager": caller(entry.original, args, kwargs, grads),
                 "compiled": caller(entry.compiled, args, kwargs, grads)}
        for fn in list(calls.values()) * 3:  # warm-up
            fn()
        cudagraphs = None
        if device.kind == "cuda":
            cudagraphs = reduce_overhead(entry, real_compile, args, kwargs, grads)
        e2e = end_to_end(calls, device, cudagraphs)
        kernels = per_kernel(calls, device, e2e)
    notes = []
    if correctness["ok"] is False:
        notes.append("The compiled output does not match eager: no speed-up is reported.")
        for series in e2e.values():
            series["speedup"] = None
    return {"device": device.kind,
            "clock": device.clock.label, "grad_mode": grad_mode,
            "mode": "forward+backward" if grads is not None else "call",
            "correctness": correctness, "e2e": e2e, "kernels": kernels, "peaks": device.peaks,
            "plots": {"kernels": kernel_figure(kernels, device.kind),
                      "roofline": roofline_figure(kernels["compiled"], device.peaks)},
            "notes": notes}


def measure_all(recorder, writer, device_kind: str) -> None:
    """One `timing` record per compiled callable and recorded call (an error is one too)."""
    device = Device(device_kind)
    deadline = time.monotonic() + TOTAL_BUDGET_S
    for entry in recorder.callables:
        for signature, call in zip(entry.signatures, entry.calls):
            head = {"callable": entry.index, "name": entry.name, "arguments": list(signature)}
            if time.monotonic() > deadline:
                writer.emit("timing", None, None, **head, error="skipped: timing budget spent")
                continue
            try:
                with capture.paused():
                    meta = measure_call(entry, call, device, recorder.real_compile)
            except Exception as exc:  # one callable failing to time costs its timing only
                writer.emit("timing", None, None, **head, error=f"{type(exc).__name__}: {exc}")
                continue
            writer.emit("timing", None, None, **head, **meta)


def configure(device_kind: str) -> None:
    """Inductor settings for the job, before the script. CPU: each C++ kernel gets a
    RECORD_FUNCTION, so the profiler sees it. GPU: each Triton kernel's inductor_meta gets
    Inductor's byte and FLOP estimates (`kernel_num_gb`, `kernel_flop`); with combo kernels off
    (the default) that is all `benchmark_combo_kernel` changes, while `benchmark_kernel` would
    also add a harness to every kernel module and print each module's path to stderr."""
    import torch._inductor.config as inductor_config
    inductor_config.cpp.enable_kernel_profile = device_kind == "cpu"
    inductor_config.benchmark_combo_kernel = True
