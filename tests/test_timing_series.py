"""Timed series on scripted clocks: paired turns and their speed-up, how many turns a series
plans and when it stops, the contention each span measures, the verdict it supports, and a GPU
series' clock figures (NVML)."""

from __future__ import annotations

import sys
import time

import pytest

from compiler_core.runtime.measure.clocks import (DRIFT_S, MAX_CALLS, MIN_TURNS,
                                                  interleaved, plan_per_call, summary)
from compiler_core.runtime.measure.gpu_clock import GpuClockWatch, summarise


def test_summary_quartiles():
    stats = summary([1.0, 2.0, 3.0, 4.0, 100.0])
    assert (stats["q1_ms"], stats["median_ms"], stats["q3_ms"]) == (2.0, 3.0, 4.0)


class ScriptedClock:
    """Each function returns its own time in ms; a host that is slow on every third turn."""

    def __init__(self):
        self.samples = 0

    def block(self, fn, calls, before=None):
        self.samples += 1
        slow = (self.samples - 1) // 2 % 3 == 2  # both samples of a turn see the same host
        return fn(slow)


def test_the_speedup_pairs_turns_that_saw_the_same_host():
    """A call the host paces: eager 2 ms, compiled 1 ms on a fast host; on a slow host eager
    takes 3.2 ms while compiled stops at 1.3 ms (its kernels' floor). Each turn's ratio is
    taken within the turn, and the speed-up is their median."""
    fns = {"eager": lambda slow: 3.2 if slow else 2.0,
           "compiled": lambda slow: 1.3 if slow else 1.0}
    series = interleaved(fns, ScriptedClock(), calls=1, blocks=30)
    speed = series["speedup"]
    assert speed["pairs"] == 30 and speed["median"] == pytest.approx(2.0)
    assert speed["low"] == pytest.approx(2.0) and speed["high"] == pytest.approx(3.2 / 1.3)
    assert series["eager"]["samples"] == series["compiled"]["samples"] == 30


class SlowClock:
    """Blocks that take 5 ms of wall time each, whatever was planned (a loaded machine)."""

    def block(self, fn, calls, before=None):
        time.sleep(0.005)
        return 1.0


def test_a_series_slowed_by_other_work_stops_after_the_least_turns_a_verdict_needs():
    """Planned on a quick probe, 60 blocks of a 50 us call took 41 s on a loaded machine."""
    from compiler_core.runtime.measure.clocks import MIN_BLOCKS
    from compiler_core.runtime.measure.verdict import MIN_PAIRS
    series = interleaved({"eager": None, "compiled": None}, SlowClock(), calls=1, blocks=60,
                         max_s=0.02)
    assert series["speedup"]["pairs"] == MIN_BLOCKS >= MIN_PAIRS


class ProbedClock:
    """Calls of `device_ms` on the device whose launches take `host_ms`; the first probe of
    each function stalls on the host as long as the call (an allocator's synchronizing free)."""

    def __init__(self, device_ms, host_ms):
        self.device_ms, self.host_ms, self.probed = device_ms, host_ms, set()

    def probe(self, fn, calls):
        stalled = fn not in self.probed
        self.probed.add(fn)
        return self.device_ms, self.device_ms if stalled else self.host_ms


def test_calls_the_host_paces_are_sampled_over_seconds():
    """Host-bound only where the launches take nearly all of the call's device-side span (which
    waits for them); sampled over DRIFT_S from half of it on, where a slow episode of the host
    can make the host pace the calls."""
    fns = {"eager": "eager", "compiled": "compiled"}
    gpu_bound = plan_per_call(fns, ProbedClock(device_ms=1.0, host_ms=0.1))
    near = plan_per_call(fns, ProbedClock(device_ms=2.0, host_ms=1.5))
    host_bound = plan_per_call(fns, ProbedClock(device_ms=2.0, host_ms=1.98))
    tiny = plan_per_call(fns, ProbedClock(device_ms=0.02, host_ms=0.02))
    assert [p["host_bound"] for p in (gpu_bound, near, host_bound, tiny)] == [
        False, False, True, True]
    assert [p["long_span"] for p in (gpu_bound, near, host_bound, tiny)] == [
        False, True, True, True]
    assert gpu_bound["host_share"] == {"eager": 0.1, "compiled": 0.1}  # the least of 3 probes
    assert near["host_share"]["compiled"] == 0.75
    assert gpu_bound["turns"] == MIN_TURNS  # 20 ms turns: 0.8 s, over the 0.4 s budget
    span_s = near["turns"] * near["calls_per_turn"] * 2 * 2e-3
    assert DRIFT_S - 0.1 <= span_s <= DRIFT_S
    assert near["calls_per_turn"] == 10  # a turn: about 20 ms of one function's calls
    assert tiny["calls_per_turn"] * tiny["turns"] == MAX_CALLS


# Contention: measured on every timed span; a verdict only where the machine was quiet enough.

def test_a_thread_waiting_for_a_cpu_is_measured_as_contention():
    """A busy process pinned to the same CPU as the timed span: the span's thread waits on the
    run queue about half the time, and the figure says so (more load only raises it)."""
    import multiprocessing
    import os

    from compiler_core.runtime.measure.contention import BUSY_WAIT_SHARE, Watch
    cpu = min(os.sched_getaffinity(0))
    saved = os.sched_getaffinity(0)
    ctx = multiprocessing.get_context("fork")
    hog = ctx.Process(target=_spin_on, args=(cpu, 3.0), daemon=True)
    hog.start()
    try:
        os.sched_setaffinity(0, {cpu})
        time.sleep(0.05)
        with Watch() as watch:
            deadline = time.perf_counter() + 0.4
            while time.perf_counter() < deadline:
                pass
    finally:
        os.sched_setaffinity(0, saved)
        hog.kill()
        hog.join()
    figures = watch.figures
    assert figures["wait_share"] > BUSY_WAIT_SHARE and figures["threads"] >= 1
    assert figures["busy"].startswith("the machine was busy") and "for a CPU per second" in figures["busy"]


def _spin_on(cpu, seconds):
    import os
    os.sched_setaffinity(0, {cpu})
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        pass


def series_of(ratios, busy=None):
    import statistics
    q1, median, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    return {"speedup": {"median": median, "low": q1, "high": q3, "pairs": len(ratios)},
            "contention": {"busy": busy, "wait_share": 0.9 if busy else 0.01}}


def test_a_verdict_rests_on_enough_quiet_paired_turns():
    """Issue 40: 'compiled is slower, about 2.0x' from 5 paired turns on a loaded machine."""
    from compiler_core.runtime.measure.verdict import MIN_PAIRS, judge
    assert judge(series_of([0.5] * 5))["outcome"] == "too_few"
    assert "5 paired turns" in judge(series_of([0.5] * 5))["reason"]
    busy = judge(series_of([0.5] * 30, busy="the machine was busy: 95 %"))
    assert busy["outcome"] == "busy" and "95 %" in busy["reason"]
    assert judge(series_of([0.5] * MIN_PAIRS))["outcome"] == "slower"
    assert judge(series_of([2.0] * 30))["outcome"] == "faster"
    assert judge(series_of([0.8, 1.2] * 15))["outcome"] == "within_noise"
    assert judge({"speedup": None})["outcome"] == "not_reported"


def test_a_gpu_series_says_when_the_power_cap_held_its_clock():
    """NVML samples (SM MHz, W, clock-event reasons) -> the series' clock figures; a sentence
    only where the power cap held the clock in most samples (0x4: NVML's SwPowerCap)."""
    capped = summarise([(1590, 686.0, 0x4), (1455, 684.0, 0x4), (1620, 690.0, 0x0)], 1980, 700)
    assert (capped["sm_mhz"], capped["power_w"]) == (1590, 686.0)
    assert abs(capped["power_capped_share"] - 2 / 3) < 1e-9
    assert "1590 of 1980 MHz" in capped["note"] and "700 W power cap" in capped["note"]
    assert "67 % of the samples" in capped["note"]
    free = summarise([(1980, 400.0, 0x0), (1965, 420.0, 0x4), (1970, 410.0, 0x0)], 1980, 700)
    assert free["note"] is None and free["sm_mhz"] == 1970
    assert summarise([], 1980, 700)["sm_mhz"] is None


def test_without_nvml_a_gpu_series_says_why_it_has_no_clock(monkeypatch):
    """Where NVML can't be loaded (this CPU venv has no pynvml), the figures say so."""
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    with GpuClockWatch(0) as watch:
        pass
    assert watch.figures["sm_mhz"] is None and "NVML unavailable" in watch.figures["why_none"]


class FakeNvml:
    """pynvml's calls GpuClockWatch makes, answering one H100's figures."""
    NVML_CLOCK_SM = 1

    def __getattr__(self, name):
        answers = {"nvmlDeviceGetMaxClockInfo": 1980, "nvmlDeviceGetEnforcedPowerLimit": 700_000,
                   "nvmlDeviceGetClockInfo": 1755, "nvmlDeviceGetPowerUsage": 690_000,
                   "nvmlDeviceGetCurrentClocksEventReasons": 0x4}
        return lambda *args: answers.get(name)


def test_a_profile_shorter_than_a_sample_period_still_gets_its_clock(monkeypatch):
    """A profile of a few calls can end before the first 20 ms tick: the watch samples at once."""
    from compiler_core.runtime.measure import gpu_clock
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml())
    monkeypatch.setattr(gpu_clock, "_handle", lambda pynvml, device: "handle")
    with GpuClockWatch(0) as watch:
        pass
    assert watch.figures["samples"] >= 1 and watch.figures["sm_mhz"] == 1755


def test_profiles_at_different_clocks_say_so():
    """eager's and compiled's profiles more than 5 % apart in SM clock: a note with both."""
    from compiler_core.runtime.measure.gpu_clock import clocks_note
    capped, free = {"sm_mhz": 1710.0}, {"sm_mhz": 1950.0}
    note = clocks_note(capped, free)
    assert "eager profile ran at 1710 MHz and the compiled one at 1950 MHz" in note
    assert "up to 14 % slower" in note
    assert clocks_note(free, {"sm_mhz": 1980.0}) is None  # 1.5 % apart
    assert clocks_note({"sm_mhz": None, "why_none": "NVML unavailable"}, free) is None


def test_a_gpu_timing_notes_launch_bound_sides_and_profiles_at_different_clocks():
    from compiler_core.runtime.measure.timing import gpu_notes
    kernels = {"totals": {"eager": {"busy_share": 0.9, "gpu_clock": {"sm_mhz": 1710.0}},
                          "compiled": {"busy_share": 0.3, "gpu_clock": {"sm_mhz": 1950.0}}}}
    launch, clocks = gpu_notes(kernels)
    assert launch.startswith("Launch-bound") and "compiled 30 %" in launch
    assert "1710 MHz" in clocks and "1950 MHz" in clocks
    kernels["totals"]["compiled"] = {"busy_share": 0.9}  # no clock recorded (an older result)
    assert gpu_notes(kernels) == []
