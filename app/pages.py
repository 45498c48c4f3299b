"""The page: `/` (empty editor, or `?example=SLUG`) and `/r/KEY` (a shared result, no recompile).

Everything the page starts with travels in one JSON block (`boot`), which Jinja's `tojson`
escapes for a `<script>` element; user text is never spliced into the HTML itself. Its
`catalogue` (the engine's stages, options and error kinds) gives the page its labels and controls.
"""

from __future__ import annotations

from flask import Blueprint, render_template

from compiler_core import catalogue, list_examples, list_lessons

from .api import expensive_permit, manager, stored

bp = Blueprint("pages", __name__)


def boot_data(share: dict | None = None) -> dict:
    return {
        "environment": manager().environment,
        "gallery": [{"slug": e.slug, "title": e.title, "teaches": e.teaches, "source": e.source}
                    for e in list_examples()],
        "lessons": [{"slug": example.slug, "concept": lesson.concept,
                     "explanation": lesson.explanation,
                     "steps": [{"text": step.text, "scene": step.scene()} for step in lesson.steps]}
                    for lesson, example in list_lessons()],
        "catalogue": catalogue(),
        "share": share,
    }


@bp.get("/")
def index():
    """The explorer."""
    return render_template("index.html", boot=boot_data())


@bp.get("/r/<key>")
def shared(key: str):
    """The explorer with a stored result's code and result loaded (the whole result: an
    expensive request)."""
    with expensive_permit():
        return render_template("index.html", boot=boot_data(stored(key)))
