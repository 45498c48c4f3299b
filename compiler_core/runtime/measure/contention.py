"""How busy the machine was while something was timed: the job's own threads waiting for a CPU.

Linux keeps, per thread, the time it was runnable but waiting on a run queue
(`/proc/self/task/TID/schedstat`, second field, ns). Summed over the process's threads and
divided by the span's wall time (`wait_share`: seconds waited per second timed), it says how
much the job lost to other work; on a 2-core machine shared with other jobs it read 0.99-1.04
during a compile next door (a 35 us call's median read 73-237 us, its quartiles 36-1425 us)
and 0-0.03 when quiet (quartiles within 2 %). A hypervisor's steal (`/proc/stat`) is the machine's share taken by other guests. The
1-minute load average per core is kept as context only: it lags and counts the job itself.
"""

from __future__ import annotations

import os
import time

# A span whose threads waited this long per second (summed), or whose machine had this share
# stolen, was too busy for its timings to carry a verdict.
BUSY_WAIT_SHARE = 0.10
BUSY_STEAL_SHARE = 0.10


def _thread_waits_ns() -> dict[str, int] | None:
    """Each thread's run-queue wait so far (ns), or None where the kernel does not say."""
    waits = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat", encoding="ascii") as fh:
                waits[tid] = int(fh.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue  # the thread ended meanwhile
    return waits or None


def _steal_ticks() -> tuple[int, int] | None:
    """(steal, all) jiffies of the machine so far, or None."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = [int(x) for x in fh.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    return (fields[7], sum(fields)) if len(fields) == 8 else None


class Watch:
    """`with Watch() as watch: ...`, then `watch.figures`: the span's contention."""

    def __enter__(self) -> "Watch":
        self._waits, self._steal = _thread_waits_ns(), _steal_ticks()
        self._started = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        wall = time.perf_counter() - self._started
        waits, steal = _thread_waits_ns(), _steal_ticks()
        waited = (sum(ns - self._waits.get(tid, 0) for tid, ns in waits.items()) / 1e9
                  if waits and self._waits else None)
        stolen = (None if not (steal and self._steal) or steal[1] == self._steal[1]
                  else (steal[0] - self._steal[0]) / (steal[1] - self._steal[1]))
        cores = len(os.sched_getaffinity(0))
        self.figures = {
            "wall_s": wall, "threads": len(waits) if waits else None,
            "wait_share": None if waited is None else max(0.0, waited) / max(wall, 1e-9),
            "steal_share": stolen, "cores": cores,
            "load_per_core": os.getloadavg()[0] / cores}
        self.figures["busy"] = busy_reason(self.figures)


def busy_reason(figures: dict | None) -> str | None:
    """Why the machine was too busy for a verdict (its figure), or None."""
    if not figures:
        return None
    wait, steal = figures.get("wait_share"), figures.get("steal_share")
    if wait is not None and wait > BUSY_WAIT_SHARE:
        threads, cores = figures["threads"], figures["cores"]
        return (f"the machine was busy: the job's threads waited {wait:.2g} s for a CPU per "
                f"second timed (summed over its {threads} thread{'s' * (threads != 1)}; "
                f"{cores} core{'s' * (cores != 1)}, load {figures['load_per_core']:.1f} per core)")
    if steal is not None and steal > BUSY_STEAL_SHARE:
        return (f"the machine was busy: the hypervisor gave {100 * steal:.0f} % of its CPU "
                "time to other machines")
    return None
