"""The graph view of one stage as the API serves it: the layout is the engine's `graph_view`
(static reports embed the same); `collapse` is "auto", "off" or a module depth, `expand` a JSON
list of the group ids to show open."""

from __future__ import annotations

import json

from compiler_core import graph_view as engine_graph_view

from .errors import ApiError


def parse_collapse(text: str) -> str | int:
    if text in ("auto", "off"):
        return text
    if text.isdigit() and 0 < int(text) < 100:
        return int(text)
    raise ApiError(400, "collapse must be 'auto', 'off' or a module depth from 1 to 99")


def parse_expand(text: str | None) -> list[str] | None:
    if text is None:
        return None
    try:
        ids = json.loads(text)
    except ValueError:
        ids = None
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise ApiError(400, "expand must be a JSON list of group ids")
    return ids


def graph_view(compiled: dict, stage: str, result: dict, collapse: str | int = "auto",
               expand: list[str] | None = None) -> dict:
    try:
        return {"ok": True, **engine_graph_view(compiled, stage, result, collapse, expand)}
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
