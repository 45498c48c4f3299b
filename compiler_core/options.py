"""Job options, one spec each: `OPTIONS` is the only list; validation, the API's checks, the
CLI's flags and the page's controls (through the catalogue) all derive from it.

`user` options are what a user may choose (CLI flags, the web form); the others are limits on
the job as a whole (all its processes together), set by the server.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, make_dataclass

# RLIMIT_FSIZE in the job process: stops output floods into the supervisor's files. Above
# Inductor's precompiled header (149 MB, torch 2.13), which a job without warm-up builds.
OUTPUT_FILE_LIMIT = 256 * 1024 * 1024


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
class Option:
    name: str
    kind: str  # "choice", "bool" or "number"
    default: object
    choices: tuple = ()
    label: str = ""  # short, for the page's controls
    help: str = ""
    user: bool = True  # users may choose it; else a server-side limit (positive numbers)
    min: float | None = None  # of a user's number
    max: float | None = None

    def check(self, value) -> None:
        """Raise OptionsError when `value` is not allowed."""
        if self.kind == "choice" and value not in self.choices:
            raise OptionsError(f"option {self.name!r} must be one of {', '.join(self.choices)}; "
                               f"got {value!r}")
        if self.kind == "bool" and not isinstance(value, bool):
            raise OptionsError(f"option {self.name!r} must be true or false")
        if self.kind == "number" and not self._number_ok(value):
            raise OptionsError(f"option {self.name!r} must be between {self.min:g} and "
                               f"{self.max:g} seconds" if self.user
                               else f"limit {self.name!r} must be positive")

    def _number_ok(self, value) -> bool:
        try:
            number = float(value)
        except (TypeError, ValueError):
            return False
        return self.min <= number <= self.max if self.user else number > 0

    def to_json(self) -> dict:
        keys = ("name", "kind", "default", "label", "help") + {
            "choice": ("choices",), "number": ("min", "max")}.get(self.kind, ())
        return {key: getattr(self, key) for key in keys}


OPTIONS: tuple[Option, ...] = (
    Option("device", "choice", "auto", ("auto", "cpu", "cuda"), "device",
           "where the script runs: auto picks cuda when the server has a GPU"),
    Option("mode", "choice", "default", ("default", "reduce-overhead", "max-autotune"), "mode",
           "torch.compile(mode=...): Inductor's mode"),
    Option("dynamic", "choice", "auto", ("auto", "true", "false"), "dynamic",
           "torch.compile(dynamic=...): auto marks a dimension dynamic after it changes"),
    Option("fullgraph", "bool", False, label="fullgraph",
           help="torch.compile(fullgraph=True): a graph break is an error"),
    Option("backend", "choice", "inductor", ("inductor", "aot_eager", "eager"), "backend",
           "torch.compile(backend=...)"),
    Option("gpu_preview", "bool", False, label="H200 preview",
           help="also compile the graphs for a virtual H200: Triton kernels and their "
                "TTIR/PTX/SASS without a GPU"),
    Option("measure", "bool", True, label="measure",
           help="after the script, time each compiled callable against eager (a few seconds "
                "more); off for the stages alone"),
    Option("views", "bool", True, label="ATen views",
           help="after the script (and its timings), re-trace each Dynamo graph to the Core "
                "ATen and prims views (seconds more on big models); off for the stages alone"),
    Option("aot", "bool", False, label="AOT",
           help="after the script, build each torch.export program's AOTInductor package "
                "(aoti_compile_and_package: a C++ build, 20-60 s) and time its load and first "
                "call against a fresh torch.compile's first call"),
    Option("timeout", "number", 120.0, label="timeout",
           help="wall-clock seconds for the whole script", min=1, max=600),
    Option("memory_mb", "number", _default_memory_mb(), user=False,
           help="cgroup memory, tmpfs included"),
    Option("cpu_s", "number", 300.0, user=False, help="CPU seconds, all processes and threads"),
    Option("pids", "number", 512, user=False, help="processes and threads at once"),
    Option("disk_mb", "number", 1024, user=False,
           help="the job's tmpfs: its folder, /tmp and /dev/shm"),
    Option("output_limit", "number", 256 * 1024, user=False,
           help="bytes of stdout/stderr kept in the result"),
)
SPECS = {option.name: option for option in OPTIONS}
USER_OPTIONS = tuple(option for option in OPTIONS if option.user)


def add_flags(parser) -> None:
    """Each user option as a command-line flag of an argparse parser: `--name` (choice or
    number) or `--name/--no-name` (bool). The CLI and the notebook's magic share them."""
    import argparse
    for option in USER_OPTIONS:
        kind = {"choice": {"choices": option.choices}, "number": {"type": float},
                "bool": {"action": argparse.BooleanOptionalAction}}[option.kind]
        parser.add_argument(f"--{option.name.replace('_', '-')}", dest=option.name,
                            default=option.default, help=option.help, **kind)


def from_flags(args) -> "Options":
    """The options an argparse namespace (from `add_flags`) holds."""
    return Options(**{option.name: getattr(args, option.name) for option in USER_OPTIONS})


def option_catalogue() -> list[dict]:
    """The options a user may choose, as JSON."""
    return [option.to_json() for option in USER_OPTIONS]


class _Methods:
    def __post_init__(self) -> None:
        for option in OPTIONS:
            option.check(getattr(self, option.name))

    @classmethod
    def from_dict(cls, raw: dict) -> "Options":
        """Build from untrusted JSON: unknown keys are an error, not silently dropped."""
        unknown = set(raw) - set(SPECS)
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


Options = make_dataclass(
    "Options", [(o.name, type(o.default), o.default) for o in OPTIONS],
    bases=(_Methods,), frozen=True, namespace={"__module__": __name__, "__doc__":
                                               "One job's options: a field per spec, checked."})
