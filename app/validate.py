"""What requests may carry: POST /api/compile's body, JSON anywhere, `Last-Event-ID`.

Options go through the engine's one parse (`Options.from_dict`: the options a user may choose,
their JSON types and values), given what only the web side knows: the server's time limit cap
(`MAX_TIMEOUT`, default 120 s, raised with `python -m app --max-timeout S`). This also checks
that the source can be written as UTF-8 (JSON may carry lone surrogates such as "\\ud800",
which no file can hold).

Everything here is a 400 (or 413) naming what is wrong, never a 500: JSON is parsed
only after its size and nesting are checked (the json module recurses once per level, so a
body of 100,000 `[` would raise RecursionError), and numbers are read from ASCII digits only
(`'²'.isdigit()` is True, but `int('²')` fails).
"""

from __future__ import annotations

import json
import re

from flask import current_app, request

from compiler_core import Options, OptionsError

from .errors import ApiError

MAX_SOURCE_CHARS = 100_000
MAX_BODY_CHARS = 1024 * 1024  # when the app sets no MAX_CONTENT_LENGTH
MAX_TIMEOUT_S = 120.0
MAX_JSON_DEPTH = 20  # the API's JSON nests 2 deep; a parse recurses once per level
# A JSON string, or an unterminated one up to the end; possessive, so linear on any text.
JSON_STRING = re.compile(r'"(?:[^"\\]++|\\.?)*+(?:"|\Z)')
JSON_BRACKET = re.compile(r"[\[\]{}]")
LAST_EVENT_ID = re.compile(r"[0-9]{1,9}")  # ASCII digits; ids count a job's events


def parse_options(raw) -> Options:
    """The user's options under this server's timeout cap; what is wrong with them, a 400."""
    cap = float(current_app.config.get("MAX_TIMEOUT", MAX_TIMEOUT_S))
    try:
        return Options.from_dict(raw, user=True, max_timeout=cap)
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


def too_deep(text: str, most: int) -> bool:
    """Whether the arrays and objects of a JSON text nest deeper than `most` (brackets inside
    strings aside); stops at the first bracket too deep."""
    depth = 0
    for bracket in JSON_BRACKET.finditer(JSON_STRING.sub("", text)):
        depth += 1 if bracket[0] in "[{" else -1
        if depth > most:
            return True
    return False


def loads_bounded(text: str | bytes, what: str, max_chars: int):
    """Parsed JSON, or a 400 naming `what` when it is too long, too deep or not JSON."""
    try:
        text = text.decode("utf-8-sig") if isinstance(text, bytes) else text
    except UnicodeDecodeError:
        raise ApiError(400, f"{what} is not UTF-8 text") from None
    if len(text) > max_chars:
        raise ApiError(413, f"{what} has {len(text):,} characters; the limit is {max_chars:,}")
    if too_deep(text, MAX_JSON_DEPTH):
        raise ApiError(400, f"{what} nests deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ApiError(400, f"{what} is not valid JSON ({exc})") from None


def json_body():
    """The request's JSON body, or None when it is not sent as JSON. Werkzeug stops a body over
    MAX_CONTENT_LENGTH with a 413 before it is read."""
    if not request.is_json:
        return None
    return loads_bounded(request.get_data(cache=True), "the JSON body",
                         current_app.config["MAX_CONTENT_LENGTH"] or MAX_BODY_CHARS)


def parse_last_event_id(header: str | None) -> int:
    """The last event a reconnecting client saw (-1: none); a 400 unless 0 to 999,999,999."""
    if header is None or header == "":
        return -1
    if not LAST_EVENT_ID.fullmatch(header):
        raise ApiError(400, "Last-Event-ID must be an event id this server sent (ASCII digits, "
                            "at most 9)")
    return int(header)


def parse_environment(body: dict) -> str | None:
    """The submit's `environment` (an id from GET /api/status), or None for the default."""
    chosen = body.get("environment")
    if chosen is not None and not isinstance(chosen, str):
        raise ApiError(400, "'environment' must be an id from GET /api/status")
    return chosen


def parse_compile_request() -> tuple[str, Options, str | None]:
    """(source, options, environment) of a POST /api/compile body."""
    body = json_body()
    if not isinstance(body, dict):
        raise ApiError(400, "send a JSON object: {\"source\": \"...\", \"options\": {...}}")
    source = body.get("source")
    if not isinstance(source, str) or not source.strip():
        raise ApiError(400, "'source' must be a non-empty string of Python code")
    if len(source) > MAX_SOURCE_CHARS:
        raise ApiError(413, f"the source has {len(source):,} characters; the limit is "
                            f"{MAX_SOURCE_CHARS:,}")
    check_text(source)
    return source, parse_options(body.get("options", {})), parse_environment(body)
