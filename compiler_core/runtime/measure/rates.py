"""Rates of the per-kernel rows: bytes moved (Inductor's estimate) -> GB/s against the device's
measured copy bandwidth, FLOP -> TFLOP/s against its measured bf16 matmul rate (GPU)."""

from __future__ import annotations

import torch


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
    """Bytes and FLOP per launch of each Triton kernel: Inductor's estimates (see
    `runtime.config.configure_job`), else (torch 2.11 adds none without `benchmark_kernel`) the
    bytes of the tensor arguments of its launches in one untimed call, each counted once."""
    from ..gpu.triton_kernels import loaded_autotuners
    measured = argument_bytes(call)
    return {t.fn.__name__: {"num_gb": t.inductor_meta.get("kernel_num_gb") or (
                                measured.get(t.fn.__name__, 0) / 1e9 or None),
                            "flop": t.inductor_meta.get("kernel_flop")}
            for t in loaded_autotuners()}


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
