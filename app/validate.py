"""What POST /api/compile accepts: a non-empty source of valid text and the user's options.

The engine checks option values; this checks what only the web side knows: which options a
user may choose and their JSON types (both from the option specs in the engine's catalogue),
the server's time limit cap (`MAX_TIMEOUT`, default 120 s, raised with `python -m app
--max-timeout S`), and that the source can be written as UTF-8 (JSON may carry lone
surrogates such as "\\ud800", which no file can hold).
"""

from __future__ import annotations

from flask import current_app, request

from compiler_core import Options, OptionsError, catalogue

from .errors import ApiError

MAX_SOURCE_CHARS = 100_000
MAX_TIMEOUT_S = 120.0
JSON_TYPES = {"choice": str, "bool": bool, "number": (int, float)}
USER_OPTIONS = {option["name"]: JSON_TYPES[option["kind"]] for option in catalogue()["options"]}


def parse_options(raw) -> Options:
    """Only the options a user may choose, each of its JSON type; the engine checks values."""
    if not isinstance(raw, dict):
        raise ApiError(400, "'options' must be a JSON object")
    for name, value in raw.items():
        kind = USER_OPTIONS.get(name)
        if kind is None:
            raise ApiError(400, f"unknown option {name!r}; allowed: {', '.join(USER_OPTIONS)}")
        if not isinstance(value, kind) or (kind != bool and isinstance(value, bool)):
            raise ApiError(400, f"option {name!r} has the wrong type")
    cap = float(current_app.config.get("MAX_TIMEOUT", MAX_TIMEOUT_S))
    if raw.get("timeout", 0) > cap:
        raise ApiError(400, f"option 'timeout' is at most {cap:g} s on this server (its "
                            "--max-timeout)")
    try:
        return Options.from_dict({"timeout": min(cap, Options().timeout), **raw})
    except OptionsError as exc:
        raise ApiError(400, str(exc)) from None


def check_text(source: str) -> None:
    """A 400 naming where the source holds something UTF-8 cannot encode (a lone surrogate)."""
    try:
        source.encode("utf-8")
    except UnicodeEncodeError as exc:
        line = source.count("\n", 0, exc.start) + 1
        column = exc.start - (source.rfind("\n", 0, exc.start) + 1) + 1
        raise ApiError(400, f"'source' is not valid text: line {line}, column {column} holds "
                            f"U+{ord(source[exc.start]):04X}, a lone surrogate, which UTF-8 "
                            "cannot encode") from None


def parse_environment() -> str | None:
    """The submit's `environment` (an id from GET /api/status), or None for the default."""
    chosen = (request.get_json(silent=True) or {}).get("environment")
    if chosen is not None and not isinstance(chosen, str):
        raise ApiError(400, "'environment' must be an id from GET /api/status")
    return chosen


def parse_compile_request() -> tuple[str, Options]:
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise ApiError(400, "send a JSON object: {\"source\": \"...\", \"options\": {...}}")
    source = body.get("source")
    if not isinstance(source, str) or not source.strip():
        raise ApiError(400, "'source' must be a non-empty string of Python code")
    if len(source) > MAX_SOURCE_CHARS:
        raise ApiError(413, f"the source has {len(source):,} characters; the limit is "
                            f"{MAX_SOURCE_CHARS:,}")
    check_text(source)
    return source, parse_options(body.get("options", {}))
