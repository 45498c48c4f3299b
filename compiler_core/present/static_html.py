"""A static report: the explorer page and one result in a single HTML file that opens from disk.

The file is the page itself (`templates/report.html` extends `index.html`) with every asset
inlined: the CSS (fonts as data URLs), the JS modules (an import map of data URLs, their
relative imports rewritten to the map's names), and, in the boot data the page starts from,
the result with its source and options, the graph view of every graph stage (laid out here, as
the API would lay it out) and plotly.js, which the page loads only when a graph is drawn. No
server is needed and nothing is fetched: `static/js/api.js` answers from the embedded data.
Built by `python -m compiler_core report` and by the web app's "Download report", alike.

The result may be forged (an uploaded log, a hostile job): a graph that cannot be shown is left
out (the page then says the report holds no graph for that stage). `dot` lays out views of up to
`layout.DOT_VIEW_ITEMS` items while they stay within `DOT_REPORT_ITEMS` in all (in graph order),
the others get the fast layered layout: the same log gives the same report, byte for byte, on
any machine. Each `dot` is still killed past `DOT_REPORT_SECONDS` (its graphs take a second or
so), and the view's `layout_note` says so where one was.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
from typing import BinaryIO, NamedTuple, TextIO

import jinja2

from ..catalogue import catalogue
from .graphoverlay import kernel_table
from .graphview import MalformedResult, graph_view
from .layout import DOT_MAX_NODES, DOT_REPORT_ITEMS, DOT_VIEW_ITEMS
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
DOT_REPORT_SECONDS = 30.0
BOOT_MARK = "torchbolt report boot data"  # where the template's boot data goes, streamed
# What jinja's `tojson` escapes, that JSON in a <script> cannot end it (htmlsafe_json_dumps)
HTML_SAFE = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("'", "\\u0027"))
STREAMED_LEVELS = 7  # boot > share > result > compiles > a compile > stages > a stage: one
# stage's JSON at most (a compile's whole, 5 levels, held 11 MiB more at a 20.9 MB log's peak)
PAGE_BLOCK = 1 << 16  # characters of the page after the boot data copied at a time
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
    """Every page module (js/ and its folders: js/views/) and the vendored CodeMirror module,
    by import-map name."""
    scripts = sorted(os.path.relpath(os.path.join(folder, name), STATIC)
                     for folder, _, names in os.walk(os.path.join(STATIC, "js"))
                     for name in names if name.endswith(".js"))
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


class WrittenJSON:
    """A value already written as `_write_json` writes it (ASCII), kept in a temporary file until
    the report is written: the graph views of a log are several MB of JSON per 10 MB of log, and
    several times that as objects, so a report holds none of them in memory."""

    def __init__(self, spool: BinaryIO, text: str):
        self.spool, self.start = spool, spool.seek(0, os.SEEK_END)
        self.size = spool.write(text.encode("ascii"))

    def read(self) -> str:
        self.spool.seek(self.start)
        return self.spool.read(self.size).decode("ascii")

    def write_to(self, out: TextIO) -> None:
        out.write(self.read())


class DataURL:
    """A static file's data URL as a JSON string (`_write_json`), read and written a block at a
    time: plotly.js's bytes, base64 and JSON held at once cost a report 4 MiB at its peak.
    Base64 needs no JSON or HTML escaping."""
    BLOCK = 3 << 16  # a multiple of 3 bytes: the blocks' base64 joined is the whole file's

    def __init__(self, path: str):
        self.path = path

    def write_to(self, out: TextIO) -> None:
        out.write(f'"data:{MIME[os.path.splitext(self.path)[1]]};base64,')
        with open(os.path.join(STATIC, self.path), "rb") as fh:
            while block := fh.read(self.BLOCK):
                out.write(base64.b64encode(block).decode("ascii"))
        out.write('"')


class MadeView(NamedTuple):
    view: WrittenJSON
    compile_id: str
    engine: str
    items: int
    most: tuple[int, str]  # the dot budget it was laid out within


def graph_views(result: dict) -> dict:
    """`"COMPILE STAGE"` -> the graph view the page asks the API for first (collapse "auto"),
    as `WrittenJSON`; graphs that cannot be shown (malformed, too many items) are left out. A
    view made of the same inputs as an earlier one (a recompile that Inductor's caches answer
    prints the same graphs), within a budget that gives it the same layout, is that view with
    its compile's id, not laid out again."""
    views, left, spool = {}, DOT_REPORT_ITEMS, tempfile.TemporaryFile()
    made: dict[bytes, MadeView] = {}
    for compiled, stage in _graph_stages(result):
        most = (DOT_VIEW_ITEMS, f"a report lays out views of up to {DOT_VIEW_ITEMS:,} with dot") \
            if left >= DOT_VIEW_ITEMS else (left, f"{left:,} were left of the report's dot "
                                                  f"budget ({DOT_REPORT_ITEMS:,} items in all)")
        inputs = _view_inputs(compiled, stage, result)
        earlier = made.get(inputs)
        if earlier and _budget_says(earlier.items, earlier.most) == _budget_says(earlier.items,
                                                                                 most):
            text = _renamed(earlier.view.read(), earlier.compile_id, compiled["id"])
            engine, items = earlier.engine, earlier.items
        else:
            try:
                view = graph_view(compiled, stage, result, layout_seconds=DOT_REPORT_SECONDS,
                                  dot_most=most)
            except ValueError:  # MalformedResult, GraphTooLarge: the report goes without it
                continue
            text = _html_safe(json.dumps(view, sort_keys=True))
            engine, items = view["engine"], len(view["nodes"])
        written = WrittenJSON(spool, text)
        views[f"{compiled['id']} {stage}"] = written
        if inputs is not None:
            made[inputs] = MadeView(written, compiled["id"], engine, items, most)
        if engine == "dot":
            left -= items
    return views


def _renamed(text: str, old: str, new: str) -> str:
    """A view's JSON with another compile id. Its keys are sorted: only `boxes` comes before
    `compile_id`, and no key in it is named so; inside a string a quote is escaped (`\\"`), so
    the first `"compile_id": ` is the view's own."""
    key = '"compile_id": '
    return text.replace(key + _html_safe(json.dumps(old)), key + _html_safe(json.dumps(new)), 1)


def _budget_says(items: int, most: tuple[int, str]) -> str:
    """What the dot budget `most` makes of a view of `items` (layout.dot_layout): dot, or the
    layered layout with a note naming the budget, or nothing (past dot's own bound)."""
    return "" if items > DOT_MAX_NODES else "dot" if items <= most[0] else most[1]


def _view_inputs(compiled: dict, stage: str, result: dict) -> bytes | None:
    """A digest of everything `graph_view` reads but the compile's id (which its stages name
    too) and the dot budget: the stage, the post-grad graph its links go through, the kernels
    and their measured times (None where they cannot be read: such a view is made, never
    reused)."""
    try:
        stages = {name: {k: v for k, v in compiled["stages"][name].items() if k != "compile_id"}
                  for name in {stage, "post_grad_graph"} & set(compiled["stages"])}
        parts = [stage, stages, compiled.get("kernels"), kernel_table(result, compiled)]
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).digest()
    except (AttributeError, KeyError, IndexError, TypeError, ValueError, ZeroDivisionError):
        return None


def write_report(out: TextIO, source: str, options: dict, result: dict) -> None:
    """The whole report file for one result and the source and options that produced it,
    written to `out` as it is made: its boot data (the result and its graph views) is streamed
    as JSON, never held as one string (a log of hundreds of MB makes a result of as many), and
    the page around it (2 MB of inlined assets) is written as jinja generates it."""
    if not isinstance(result, dict):
        raise MalformedResult("the result is not a JSON object")
    boot = {
        "environment": result.get("environment") or {},
        "gallery": [],
        "lessons": [],
        "catalogue": catalogue(),
        "share": {"key": None, "source": source, "options": options, "result": result},
        "report": {"graphs": graph_views(result),
                   "assets": {path: DataURL(path) for path in ON_DEMAND}},
    }
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(os.path.join(PAGE_ASSETS, "templates")), autoescape=True)
    environment.globals["url_for"] = lambda endpoint, **values: "#"  # links to the server
    page = environment.get_template("report.html").generate(
        boot=BOOT_MARK, css=inline_css(), importmap=import_map(), favicon=data_url("favicon.svg"),
        entry=f"{MODULE_PREFIX}js/main.js")
    mark = json.dumps(BOOT_MARK)  # as `tojson` writes it, in one of the page's pieces
    with tempfile.TemporaryFile("w+", encoding="utf-8") as rest:  # the page after the boot data
        target = out
        for piece in page:
            if target is out and mark in piece:
                before, after = piece.split(mark, 1)
                out.write(before)
                target = rest
                piece = after
            target.write(piece)
        if target is out:
            raise ValueError("templates/report.html has no place for the boot data")
        _write_json(out, boot, STREAMED_LEVELS)
        rest.seek(0)
        shutil.copyfileobj(rest, out, PAGE_BLOCK)


def _write_json(out: TextIO, value, levels: int) -> None:
    """`value` as jinja's `tojson` writes it (sorted keys, HTML-safe), its dicts and lists
    `levels` deep written part by part (each part by the C encoder, in one go)."""
    if isinstance(value, (WrittenJSON, DataURL)):
        value.write_to(out)
        return
    if levels and isinstance(value, (dict, list)):
        items = sorted(value.items()) if isinstance(value, dict) else enumerate(value)
        out.write("{" if isinstance(value, dict) else "[")
        for i, (key, item) in enumerate(items):
            out.write(", " if i else "")
            if isinstance(value, dict):
                out.write(_html_safe(json.dumps(key)) + ": ")
            _write_json(out, item, levels - 1)
        out.write("}" if isinstance(value, dict) else "]")
        return
    out.write(_html_safe(json.dumps(value, sort_keys=True)))


def _html_safe(text: str) -> str:
    for char, escaped in HTML_SAFE:
        if char in text:
            text = text.replace(char, escaped)
    return text


def report_html(source: str, options: dict, result: dict) -> str:
    """`write_report`'s file as one string."""
    out = io.StringIO()
    write_report(out, source, options, result)
    return out.getvalue()
