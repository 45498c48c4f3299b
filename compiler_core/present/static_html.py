"""A static report: the explorer page and one result in a single HTML file that opens from disk.

The file is the page itself (`templates/report.html` extends `index.html`) with every asset
inlined: the CSS (fonts as data URLs), the JS modules (an import map of data URLs, their
relative imports rewritten to the map's names), and, in the boot data the page starts from,
the result with its source and options, the graph view of every graph stage (laid out here, as
the API would lay it out) and plotly.js, which the page loads only when a graph is drawn. No
server is needed and nothing is fetched: `static/js/api.js` answers from the embedded data.
Built by `python -m compiler_core report` and by the web app's "Download report", alike.

The result may be forged (an uploaded log, a hostile job): a graph that cannot be shown is left
out (the page then says the report holds no graph for that stage), and `dot` gets the
`layout_seconds` limit once for the whole report, so a report of many dense graphs still takes
about that long plus the fast layered layouts.
"""

from __future__ import annotations

import base64
import os
import re
import sys
import time

import jinja2

from ..catalogue import catalogue
from ..limits import limit
from .graphview import MalformedResult, graph_view
from ..features import GRAPH_STAGES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The page's files: beside the packages in a source tree (and an editable install), else where
# a plain `pip install .` puts them (pyproject.toml's data-files).
PAGE_ASSETS = ROOT if os.path.isdir(os.path.join(ROOT, "static")) else os.path.join(
    sys.prefix, "share", "torchbolt")
STATIC = os.path.join(PAGE_ASSETS, "static")
MODULE_PREFIX = "torchbolt/"  # import-map names: torchbolt/js/main.js ...
RELATIVE_IMPORT = re.compile(r'(\bfrom\s*")(\.{1,2}/[^"]+)(")')
CSS_URL = re.compile(r'url\("(\.\./[^"]+)"\)')
ON_DEMAND = ("vendor/plotly.min.js",)  # loaded by the page when first needed
MIME = {".js": "text/javascript", ".woff2": "font/woff2", ".svg": "image/svg+xml"}


def data_url(path: str) -> str:
    """A static file (path relative to static/) as a data URL."""
    with open(os.path.join(STATIC, path), "rb") as fh:
        content = fh.read()
    return data_url_of(content, MIME[os.path.splitext(path)[1]])


def data_url_of(content: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(content).decode('ascii')}"


def _module(path: str) -> bytes:
    """A page module with its relative imports renamed to import-map names."""
    with open(os.path.join(STATIC, path), encoding="utf-8") as fh:
        text = fh.read()
    folder = os.path.dirname(path)

    def rename(match: re.Match) -> str:
        target = os.path.normpath(os.path.join(folder, match[2]))
        return f"{match[1]}{MODULE_PREFIX}{target}{match[3]}"

    return RELATIVE_IMPORT.sub(rename, text).encode("utf-8")


def import_map() -> dict:
    """Every page module and the vendored CodeMirror module, by import-map name."""
    scripts = sorted(f"js/{name}" for name in os.listdir(os.path.join(STATIC, "js"))
                     if name.endswith(".js"))
    imports = {MODULE_PREFIX + path: data_url_of(_module(path), "text/javascript")
               for path in scripts}
    imports[MODULE_PREFIX + "vendor/codemirror.js"] = data_url("vendor/codemirror.js")
    return {"imports": imports}


def inline_css() -> str:
    with open(os.path.join(STATIC, "css", "app.css"), encoding="utf-8") as fh:
        css = fh.read()
    return CSS_URL.sub(lambda m: f'url("{data_url(os.path.normpath(os.path.join("css", m[1])))}")',
                       css)


def _graph_stages(result: dict):
    """(compile, stage) of every graph stage of the result's well-formed compiles."""
    compiles = result.get("compiles")
    for compiled in compiles if isinstance(compiles, list) else []:
        stages = compiled.get("stages") if isinstance(compiled, dict) else None
        if isinstance(stages, dict) and isinstance(compiled.get("id"), str):
            yield from ((compiled, stage) for stage in GRAPH_STAGES if stage in stages)


def graph_views(result: dict) -> dict:
    """`"COMPILE STAGE"` -> the graph view the page asks the API for first (collapse "auto");
    graphs that cannot be shown (malformed, too many items) are left out."""
    views, deadline = {}, time.monotonic() + limit("layout_seconds")
    for compiled, stage in _graph_stages(result):
        try:
            views[f"{compiled['id']} {stage}"] = graph_view(
                compiled, stage, result, layout_seconds=max(0.0, deadline - time.monotonic()))
        except ValueError:  # MalformedResult, GraphTooLarge: the report goes without it
            continue
    return views


def report_html(source: str, options: dict, result: dict) -> str:
    """The whole report file for one result and the source and options that produced it."""
    if not isinstance(result, dict):
        raise MalformedResult("the result is not a JSON object")
    boot = {
        "environment": result.get("environment") or {},
        "gallery": [],
        "lessons": [],
        "catalogue": catalogue(),
        "share": {"key": None, "source": source, "options": options, "result": result},
        "report": {"graphs": graph_views(result),
                   "assets": {path: data_url(path) for path in ON_DEMAND}},
    }
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(os.path.join(PAGE_ASSETS, "templates")), autoescape=True)
    environment.globals["url_for"] = lambda endpoint, **values: "#"  # links to the server
    return environment.get_template("report.html").render(
        boot=boot, css=inline_css(), importmap=import_map(), favicon=data_url("favicon.svg"),
        entry=f"{MODULE_PREFIX}js/main.js")
