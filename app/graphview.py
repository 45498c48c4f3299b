"""The graph view of one stage as the API serves it: the layout is the engine's `graph_view`
(static reports embed the same); `collapse` is "auto", "off" or a module depth, `expand` a JSON
list of the group ids to show open.

A layout costs up to the `layout_seconds` limit (Graphviz `dot` on a dense graph), so answers
are cached, as JSON, in a bounded LRU, for final results only (a running job's partial result
still grows, and a transient failure is run again under the same key). A view is cached by what
it depends on, (result key, compile, stage, the groups shown open: `graph_expansion`), so an
unknown `expand` id, a reordered list or a `collapse` that opens the same groups is the same
view; each request as asked is remembered as a small alias of its view, so a view asked again
is answered without reading the result. A layout the cache cannot answer spends the client's
layout seconds (the `layout_seconds_per_client` limit) and holds one of its few
expensive-request permits (`app/streams.py`). Any result may be forged: a graph that cannot be
shown is a 422 of that result, a view over `graph_nodes_laid_out` items a 413; never a 500.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from flask import current_app

from compiler_core import ErrorKind, GraphTooLarge, MalformedResult, graph_expansion, limit
from compiler_core import graph_view as engine_graph_view

from .errors import ApiError
from .validate import loads_bounded

COLLAPSE_DEPTH = re.compile(r"[1-9][0-9]?")  # ASCII digits only: '²'.isdigit() is True
MAX_EXPAND_CHARS = 64 * 1024


def parse_collapse(text: str) -> str | int:
    if text in ("auto", "off"):
        return text
    if COLLAPSE_DEPTH.fullmatch(text):
        return int(text)
    raise ApiError(400, "collapse must be 'auto', 'off' or a module depth from 1 to 99")


def parse_expand(text: str | None) -> list[str] | None:
    if text is None:
        return None
    ids = loads_bounded(text, "expand", MAX_EXPAND_CHARS)
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise ApiError(400, "expand must be a JSON list of group ids")
    return ids


def find_compile(result, compile_id: str) -> dict | None:
    """The compile of that id in a result that may be forged (a 422 when it has no compiles)."""
    compiles = result.get("compiles") if isinstance(result, dict) else None
    if not isinstance(compiles, list):
        raise ApiError(422, "this result is malformed: it has no list of compiles")
    return next((c for c in compiles if isinstance(c, dict) and c.get("id") == compile_id), None)


def is_final(result) -> bool:
    """A result that will never change under its key: finished, and not to be run again."""
    error = result.get("error") if isinstance(result, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    return (isinstance(result, dict) and not result.get("partial")
            and not (isinstance(kind, str) and ErrorKind.is_transient(kind)))


def graph_view(compiled: dict, stage: str, result: dict, collapse: str | int = "auto",
               expand: list[str] | None = None) -> dict:
    return {"ok": True, **engine_errors(engine_graph_view, compiled, stage, result, collapse,
                                        expand)}


def engine_errors(call, *args):
    """The engine's answer, its refusals of a forged or unknown view as API errors."""
    try:
        return call(*args)
    except MalformedResult as exc:
        raise ApiError(422, f"this result's graph cannot be shown: {exc}") from None
    except GraphTooLarge as exc:
        raise ApiError(413, str(exc)) from None
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None


class GraphRequest(NamedTuple):
    """A view as asked (the alias of a `GraphView`)."""
    key: str
    compile_id: str
    stage: str
    collapse: str | int
    expand: tuple[str, ...] | None


class GraphView(NamedTuple):
    """What a view's layout depends on: what it is cached by."""
    key: str
    compile_id: str
    stage: str
    expanded: tuple[str, ...]


def cached_view(wanted: GraphRequest) -> bytes | None:
    view = current_app.extensions["torchbolt.graph_views"].get(wanted)
    return None if view is None else current_app.extensions["torchbolt.graph_cache"].get(view)


def view_body(wanted: GraphRequest, result, client: str, permit) -> bytes:
    """The view's JSON: from the cache under its `GraphView`, else laid out now under the
    client's layout budget and an expensive-request `permit()`; kept while the result is final."""
    if result is None:
        raise ApiError(404, "no result under this key")
    compiled = find_compile(result, wanted.compile_id)
    stages = compiled.get("stages") if compiled is not None else {}
    if isinstance(stages, dict) and wanted.stage not in stages:  # else the engine's 422
        raise ApiError(404, f"compile {wanted.compile_id!r} has no stage {wanted.stage!r}")
    view = GraphView(wanted.key, wanted.compile_id, wanted.stage, engine_errors(
        graph_expansion, compiled, wanted.stage, wanted.collapse,
        None if wanted.expand is None else list(wanted.expand)))
    cache = current_app.extensions["torchbolt.graph_cache"]
    body = cache.get(view)
    if body is None:
        layouts = current_app.extensions["torchbolt.layouts"]
        with layouts.spending_seconds(client), permit():
            laid = graph_view(compiled, wanted.stage, result, "auto", list(view.expanded))
        body = current_app.json.dumps(laid, separators=(",", ":")).encode("utf-8")
    if is_final(result):
        cache.put(view, body)
        current_app.extensions["torchbolt.graph_views"].put(wanted, view, alias_size(wanted))
    return body


def alias_size(wanted: GraphRequest) -> int:
    return 200 + len(repr(wanted))


def layout_refusal(wait: int) -> str:
    most = limit("layout_seconds_per_client")
    return (f"this client laid out its share of graph views (the layout_seconds_per_client "
            f"limit: {most:g} s of layout at once, then {most:g} s a minute); try again in "
            f"{wait} s (views already laid out are answered at once)")


def layout_settings() -> tuple[float, float]:
    most = limit("layout_seconds_per_client")
    return most, most / 60.0
