"""Job options, one spec each: `OPTIONS` is the only list; validation, the API's checks, the
CLI's flags and the page's controls (through the catalogue) all derive from it.

`user` options are what a user may choose (CLI flags, the web form); the others are limits on
the job as a whole (all its processes together), set by the server.

Options from outside (the API's JSON, the CLI's flags, a job's message in the job process) come
in through one parse, `Options.from_dict`, and leave as one serialized form, `Options.to_dict()`,
made once: a server parses a request's options once, and the job process once more.

How they become `torch.compile` arguments is here too: `compile_defaults` and the one table of
rules on where a default fits, `COMPILE_RULES`, which the job process applies to each call
through `compile_arguments` (this module imports no torch).
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


JSON_TYPES = {"choice": str, "bool": bool, "number": (int, float)}


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

    def check_type(self, value) -> None:
        """Raise OptionsError unless `value` has this kind's JSON type (a bool is no number)."""
        kind = JSON_TYPES[self.kind]
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise OptionsError(f"option {self.name!r} has the wrong type")

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
USER_SPECS = {option.name: option for option in USER_OPTIONS}


@dataclass(frozen=True)
class CompileRule:
    """Where a job's default for torch.compile's `key` fits a call that leaves `key` unset:
    each (argument, value) of `needs` holds in the job's defaults and in the call's arguments
    merged over them, and those arguments hold none of `excludes`. Elsewhere it is left out."""
    key: str
    needs: tuple[tuple[str, object], ...] = ()
    excludes: tuple[str, ...] = ()

    def fits(self, defaults: dict, merged: dict) -> bool:
        return (all(defaults.get(name) == value == merged.get(name) for name, value in self.needs)
                and not any(name in merged for name in self.excludes))


# A mode is Inductor's (another backend refuses it), and torch.compile refuses mode= beside
# options=; a mode the call passes itself stays, as every explicit argument does.
COMPILE_RULES: tuple[CompileRule, ...] = (
    CompileRule("mode", needs=(("backend", "inductor"),), excludes=("options",)),
)


def compile_arguments(defaults: dict, explicit: dict) -> dict:
    """One torch.compile call's arguments: the call's own (`explicit`) over the job's
    `defaults`, less each default that `COMPILE_RULES` says does not fit the call."""
    merged = {**defaults, **explicit}
    for rule in COMPILE_RULES:
        if rule.key not in explicit and not rule.fits(defaults, merged):
            merged.pop(rule.key, None)
    return merged


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
    """The options an argparse namespace (from `add_flags`) holds, parsed as the API's are."""
    return Options.from_dict({name: getattr(args, name) for name in USER_SPECS}, user=True)


def option_catalogue() -> list[dict]:
    """The options a user may choose, as JSON."""
    return [option.to_json() for option in USER_OPTIONS]


class _Methods:
    def __post_init__(self) -> None:
        for option in OPTIONS:
            option.check(getattr(self, option.name))
        self.__dict__["_serialized"] = asdict(self)  # frozen: set once, as it is checked

    @classmethod
    def from_dict(cls, raw, user: bool = False, max_timeout: float | None = None) -> "Options":
        """The one parse of options from outside (untrusted JSON, flags, a job's spec): each
        name known (`user`: one a user may choose), of its JSON type, then within
        `max_timeout` (a server's cap, which the default follows), then its value checked."""
        if not isinstance(raw, dict):
            raise OptionsError("'options' must be a JSON object")
        allowed = USER_SPECS if user else SPECS
        for name, value in raw.items():
            if name not in allowed:
                raise OptionsError(f"unknown option {name!r}; allowed: {', '.join(allowed)}")
            allowed[name].check_type(value)
        if max_timeout is not None:
            if raw.get("timeout", 0) > max_timeout:
                raise OptionsError(f"option 'timeout' is at most {max_timeout:g} s on this "
                                   "server (its --max-timeout)")
            raw = {"timeout": min(max_timeout, SPECS["timeout"].default), **raw}
        return cls(**raw)

    def to_dict(self) -> dict:
        """The options' one serialized form, made once as they were checked: the content key,
        the stored row, the job process's message (rebuilt there once, by `from_dict`) and the
        result's `options` all carry this same dict. Shared, so never changed."""
        return self._serialized

    def compile_defaults(self) -> dict:
        """Defaults for the script's torch.compile calls, as arguments; `compile_arguments`
        puts each call's own over them and drops those that do not fit it."""
        defaults = {"backend": self.backend, "fullgraph": self.fullgraph}
        if self.dynamic != "auto":
            defaults["dynamic"] = self.dynamic == "true"
        if self.mode != "default":
            defaults["mode"] = self.mode
        return defaults


Options = make_dataclass(
    "Options", [(o.name, type(o.default), o.default) for o in OPTIONS],
    bases=(_Methods,), frozen=True, namespace={"__module__": __name__, "__doc__":
                                               "One job's options: a field per spec, checked."})
