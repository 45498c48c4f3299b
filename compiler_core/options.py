"""Job options: what the user (CLI flags or the web form) may choose, validated in one place."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, fields

DEVICES = ("auto", "cpu", "cuda")
MODES = ("default", "reduce-overhead", "max-autotune")
DYNAMIC = ("auto", "true", "false")
BACKENDS = ("inductor", "aot_eager", "eager")
OUTPUT_FILE_LIMIT = 64 * 1024 * 1024  # RLIMIT_FSIZE in the worker child: stops output floods


def _default_memory_mb() -> int:
    """At most 4 GiB and at most a quarter of the machine's memory."""
    try:
        total_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20
    except (ValueError, OSError):
        total_mb = 16384
    return min(4096, total_mb // 4)


class OptionsError(ValueError):
    """An option has a value outside its allowed set."""


@dataclass(frozen=True)
class Options:
    device: str = "auto"
    mode: str = "default"
    dynamic: str = "auto"
    fullgraph: bool = False
    backend: str = "inductor"
    gpu_preview: bool = False  # also compile the graphs for a virtual H200 (Triton stages on CPU)
    measure: bool = True  # time eager vs compiled after the script (seconds more per job)
    timeout: float = 120.0  # wall-clock seconds for the whole script
    # Limits on the job as a whole (all its processes together; server-side, not user options).
    memory_mb: int = field(default_factory=_default_memory_mb)  # cgroup memory, tmpfs included
    cpu_s: float = 300.0  # CPU seconds, all processes and threads together
    pids: int = 512  # processes and threads at once
    disk_mb: int = 1024  # the job's tmpfs: its folder, /tmp and /dev/shm
    output_limit: int = 256 * 1024  # bytes of stdout/stderr kept in the result

    def __post_init__(self) -> None:
        for name, allowed in (("device", DEVICES), ("mode", MODES),
                              ("dynamic", DYNAMIC), ("backend", BACKENDS)):
            if getattr(self, name) not in allowed:
                raise OptionsError(f"option {name!r} must be one of {', '.join(allowed)}; "
                                   f"got {getattr(self, name)!r}")
        for name in ("fullgraph", "gpu_preview", "measure"):
            if not isinstance(getattr(self, name), bool):
                raise OptionsError(f"option {name!r} must be true or false")
        if not 1 <= float(self.timeout) <= 600:
            raise OptionsError("option 'timeout' must be between 1 and 600 seconds")
        for name in ("memory_mb", "cpu_s", "pids", "disk_mb"):
            if not getattr(self, name) > 0:
                raise OptionsError(f"limit {name!r} must be positive")

    @classmethod
    def from_dict(cls, raw: dict) -> "Options":
        """Build from untrusted JSON: unknown keys are an error, not silently dropped."""
        known = {f.name for f in fields(cls)}
        unknown = set(raw) - known
        if unknown:
            raise OptionsError(f"unknown option(s): {', '.join(sorted(unknown))}")
        return cls(**raw)

    def to_dict(self) -> dict:
        return asdict(self)

    def compile_defaults(self) -> dict:
        """Defaults applied to the script's torch.compile calls (explicit arguments win)."""
        defaults = {"backend": self.backend, "fullgraph": self.fullgraph}
        if self.dynamic != "auto":
            defaults["dynamic"] = self.dynamic == "true"
        if self.mode != "default" and self.backend == "inductor":
            defaults["mode"] = self.mode
        return defaults
