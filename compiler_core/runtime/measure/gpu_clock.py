"""The clock a GPU series ran at, and whether the power cap held it down (NVML, sampled).

Measured on an H100 80GB HBM3 (700 W, 1980 MHz max; `bench/gpu_clock_regimes.py`): a bf16
matmul+GELU called back to back held the card at ~685 W with the software power cap active and
its SM clock at 1455-1590 MHz, so each call took 1.057x (eager) and 1.074x (compiled) of
`triton.testing.do_bench`, whose 256 MB memset between calls let the clock reach 1620-1650 MHz.
Both figures are true of their regime; the series says which regime it ran in.

NVML comes from nvidia-ml-py (`import pynvml`, as `torch.cuda.clock_rate` uses it); without it,
or where NVML cannot see the device, the figures are None with the reason.
"""

from __future__ import annotations

import statistics
import threading

SAMPLE_S = 0.02
POWER_CAP = 0x4  # nvmlClocksEventReasonSwPowerCap (older name: ...ThrottleReasonSwPowerCap)
HW_SLOWDOWN = 0x8 | 0x40 | 0x80  # hardware slowdown, hardware thermal, power brake
CAPPED_SHARE = 0.5  # capped in at least half the samples: the series ran under the cap


def _handle(pynvml, device: int):
    """The NVML handle of CUDA device `device` (by UUID: CUDA_VISIBLE_DEVICES can renumber)."""
    import torch
    uuid = getattr(torch.cuda.get_device_properties(device), "uuid", None)
    if uuid is not None:
        return pynvml.nvmlDeviceGetHandleByUUID(f"GPU-{uuid}")
    return pynvml.nvmlDeviceGetHandleByIndex(device)


def _reasons(pynvml, handle) -> int:
    get = (getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
           or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons)
    return int(get(handle))


def summarise(samples: list[tuple[float, float, int]], max_mhz: float,
              limit_w: float) -> dict:
    """Figures of `(sm_mhz, power_w, reasons)` samples: medians, the share of samples the
    power cap (or a hardware slowdown) held the clock, and a sentence when it held it most."""
    if not samples:
        return {"sm_mhz": None, "why_none": "no sample fell inside the series"}
    capped = sum(1 for *_, r in samples if r & POWER_CAP) / len(samples)
    slowed = sum(1 for *_, r in samples if r & HW_SLOWDOWN) / len(samples)
    sm = statistics.median(s[0] for s in samples)
    power = statistics.median(s[1] for s in samples)
    out = {"sm_mhz": sm, "max_sm_mhz": max_mhz, "power_w": power, "power_limit_w": limit_w,
           "power_capped_share": capped, "hw_slowdown_share": slowed, "samples": len(samples),
           "note": None}
    if capped >= CAPPED_SHARE:
        out["note"] = (f"the GPU's {limit_w:.0f} W power cap held its clock in "
                       f"{100 * capped:.0f} % of the samples (median {sm:.0f} of {max_mhz:.0f} "
                       f"MHz, {power:.0f} W drawn on NVML's average): a figure taken at another "
                       "clock differs by as much (do_bench's memset between calls lets the clock "
                       "rise: 1.06-1.07x on an H100's bf16 GEMM)")
    elif slowed >= CAPPED_SHARE:
        out["note"] = f"the GPU slowed itself (thermal or power brake) at {sm:.0f} MHz"
    return out


class GpuClockWatch:
    """`with GpuClockWatch(device) as watch: ...`, then `watch.figures` (see `summarise`)."""

    def __init__(self, device: int) -> None:
        self.device, self.figures = device, None
        self._samples: list[tuple[float, float, int]] = []
        self._stop = threading.Event()

    def __enter__(self) -> "GpuClockWatch":
        try:
            import pynvml
            pynvml.nvmlInit()
            self._nvml, self._h = pynvml, _handle(pynvml, self.device)
            self._max = pynvml.nvmlDeviceGetMaxClockInfo(self._h, pynvml.NVML_CLOCK_SM)
            self._limit = pynvml.nvmlDeviceGetEnforcedPowerLimit(self._h) / 1000
        except Exception as error:  # noqa: BLE001 (no NVML, no driver access: say so)
            self.figures = {"sm_mhz": None, "why_none": f"NVML unavailable ({error})"[:200]}
            return self
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        """A sample at once (a profile of a few calls can end before the next), then every
        SAMPLE_S."""
        nvml, h = self._nvml, self._h
        while True:
            try:
                self._samples.append((nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM),
                                      nvml.nvmlDeviceGetPowerUsage(h) / 1000, _reasons(nvml, h)))
            except Exception:  # noqa: BLE001 (a failed read costs its sample only)
                pass
            if self._stop.wait(SAMPLE_S):
                return

    def __exit__(self, *exc) -> None:
        if self.figures is not None:
            return
        self._stop.set()
        self._thread.join()
        self.figures = summarise(self._samples, self._max, self._limit)


CLOCKS_DIFFER = 1.05  # the two profiles' SM clocks further apart than this: said


def clocks_note(eager: dict, compiled: dict) -> str | None:
    """A sentence where eager's and compiled's profiles ran at SM clocks more than 5 % apart:
    their per-kernel times then compare across clocks (an H100's eager matmul_epilogue profile
    ran power-capped at 1695-1770 MHz and its compiled one at 1950 MHz: issue 44's note)."""
    if eager.get("sm_mhz") is None or compiled.get("sm_mhz") is None:
        return None
    low, high = sorted((eager["sm_mhz"], compiled["sm_mhz"]))
    if high / low <= CLOCKS_DIFFER:
        return None
    return (f"The eager profile ran at {eager['sm_mhz']:.0f} MHz and the compiled one at "
            f"{compiled['sm_mhz']:.0f} MHz (NVML): per-kernel times compare across clocks, and "
            f"the slower clock's side reads up to {100 * (high / low - 1):.0f} % slower for it.")
