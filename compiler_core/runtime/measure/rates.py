"""Rates of the per-kernel rows: bytes moved (Inductor's estimate, else counted from the
launch's tensor arguments) -> GB/s against the device's memory bandwidth, FLOP -> TFLOP/s
against its measured bf16 matmul rate (GPU). A Triton kernel's rate comes from its time alone
(`alone.py`), like do_bench's; other kernels' from the profiler.
The bandwidth peak is the device's data-sheet figure where torchbolt knows it (a copy kernel
reaches less: its measured rate is shown beside it), else the measured copy bandwidth; a rate
above that (possible only without a data-sheet figure) reads 100 % and says so."""

from __future__ import annotations

from .alone import moved_bytes


def add_rates(rows: list[dict], estimates: dict[str, dict], peaks: dict | None,
              alone_us: dict[str, float] | None = None) -> None:
    """Bytes and FLOP per call -> GB/s, TFLOP/s and % of peak; each row names its bytes'
    source (`bytes_source`)."""
    for row in rows:
        estimate = estimates.get(row["name"], {})
        if row["name"] in (alone_us or {}):
            row["us_alone"] = alone_us[row["name"]]
        if estimate.get("num_gb"):
            row["gb_per_call"] = estimate["num_gb"] * row["launches"]
            row["bytes_source"] = estimate["bytes_source"]
        if estimate.get("flop"):
            row["flop_per_call"] = estimate["flop"] * row["launches"]
        us = row["us_alone"] * row["launches"] if "us_alone" in row else row["us_per_call"]
        seconds = us * 1e-6
        if row.get("gb_per_call") and seconds:
            row["gbps"] = row["gb_per_call"] / seconds
            if peaks:
                share = 100 * row["gbps"] / peaks["bandwidth_gbps"]
                row["pct_peak_bandwidth"] = min(100.0, share)
                if share > 100:
                    row["above_peak"] = True
        if row.get("flop_per_call") and seconds:
            row["tflops"] = row["flop_per_call"] / seconds / 1e12
            if peaks:  # of the measured matmul rate: a kernel can beat it only by noise
                row["pct_peak_bf16"] = min(100.0, 100 * row["tflops"] / peaks["bf16_tflops"])


# Where a row's bytes come from, as the page says it.
INDUCTOR_ESTIMATE = ("Inductor's estimate (kernel_num_gb: each buffer's accessed size, "
                     "in-place buffers read and written)")
COUNTED = ("counted from the launch's tensor arguments: each read or written once, an "
           "in_out_ptr (updated in place) read and written")


def kernel_estimates(launches: dict) -> dict[str, dict]:
    """Bytes and FLOP per launch of each Triton kernel: Inductor's estimates (see
    `runtime.config.configure_measure`), else (torch 2.11 adds none without `benchmark_kernel`)
    the bytes its captured launch moves (`alone.moved_bytes`)."""
    out = {}
    for name, launch in launches.items():
        estimate = launch.autotuner.inductor_meta.get("kernel_num_gb")
        out[name] = {"num_gb": estimate or moved_bytes(launch) / 1e9 or None,
                     "bytes_source": INDUCTOR_ESTIMATE if estimate else COUNTED,
                     "flop": launch.autotuner.inductor_meta.get("kernel_flop")}
    return out

