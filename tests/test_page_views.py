"""The page's view registry (static/js/views/index.js) against the catalogue: every stage's view
and panel, as the server declares them, is one the page renders, and the page's code names no
stage (a stage is shown through what its declaration says, not through comparisons of names)."""

from __future__ import annotations

import glob
import os
import re

from compiler_core import catalogue

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "static", "js")
STAGES = catalogue()["stages"]
# Stage names the page still spells out, each with why (issue 42 leaves these for later):
KNOWN = {
    "settings.js": {"dynamo_graph", "kernels", "aot_forward"},  # the stages panes open on
    "compare.js": {"dynamo_graph"},  # two runs are diffed at their Dynamo graphs first
    "runpanel.js": {"guards", "dynamo_graph"},  # a recompile's diff chips
    "graph.js": {"dynamo_graph", "post_grad_graph"},  # node provenance across graphs
}
# Literals that are a view's mode or a result's field, not the stage of the same name.
NOT_STAGES = {"layout.js": {"timings"}, "stages.js": {"timings"},
              "timings.js": {"timings", "kernels"}, "views/timings.js": {"timings"},
              "guards.js": {"guards"}}


def registry(name: str) -> set[str]:
    """The keys of `const NAME = { key: ..., ... }` in views/index.js."""
    text = open(os.path.join(PAGE, "views", "index.js"), encoding="utf-8").read()
    body = re.search(rf"const {name} = \{{(.*?)\}};", text, re.S).group(1)
    return set(re.findall(r"(\w+): ", re.sub(r"\{[^{}]*\}", "", body)))


def test_every_declared_view_and_panel_has_a_renderer():
    views, panels = registry("VIEWS"), registry("PANELS")
    assert {stage["view"] for stage in STAGES} <= views, views
    assert {stage["panel"] for stage in STAGES if stage["panel"]} <= panels, panels
    for view in views:
        assert os.path.exists(os.path.join(PAGE, "views", f"{view}.js")), view


def stage_literals(path: str) -> set[str]:
    """Stage names the module spells as string literals or object keys (comments left out)."""
    code = re.sub(r"^\s*//.*$|(?<=[;,)}\s])//.*$", "", open(path, encoding="utf-8").read(),
                  flags=re.M)
    names = {stage["name"] for stage in STAGES}
    spelled = {m.group(2) or m.group(3) for m in
               re.finditer(r"""(["'`])([a-z_]+)\1|\b([a-z_]+)(?=:\s*")""", code)}
    prefixes = {m.group(1) for m in re.finditer(r"""startsWith\(["'`]([a-z_]+)""", code)}
    return (spelled & names) | {p for p in prefixes if any(n.startswith(p) for n in names)}


def test_the_page_code_compares_no_stage_names():
    found = {}
    for path in glob.glob(os.path.join(PAGE, "**", "*.js"), recursive=True):
        module = os.path.relpath(path, PAGE)
        spelled = stage_literals(path) - KNOWN.get(module, set()) - NOT_STAGES.get(module, set())
        if spelled:
            found[module] = sorted(spelled)
    assert not found, found
