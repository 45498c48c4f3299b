"""The graph view of one stage, as the API serves it (the layout is the engine's `graph_view`,
which static reports embed too); `collapse` is "auto", "off" or a module depth."""

from __future__ import annotations

from compiler_core import graph_view as engine_graph_view

from .errors import ApiError


def parse_collapse(text: str) -> str | int:
    if text in ("auto", "off"):
        return text
    if text.isdigit() and 0 < int(text) < 100:
        return int(text)
    raise ApiError(400, "collapse must be 'auto', 'off' or a module depth from 1 to 99")


def graph_view(artifact: dict, collapse_to: str | int = "auto") -> dict:
    try:
        return {"ok": True, **engine_graph_view(artifact, collapse_to)}
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
