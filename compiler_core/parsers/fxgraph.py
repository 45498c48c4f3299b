"""Graph nodes of any FX stage, read from its printed code (the Dynamo graph also has a node
table taken from the live GraphModule; the other FX stages exist only as PyTorch's printed code).
Part of the engine so that every consumer (web app, CLI users, reports) reads graphs one way.

FX prints one node per line, `name: "f32[4, 4][4, 1]cpu" = torch.ops.aten.mm.default(a, b);  a =
None`, placeholders as `forward`'s parameters and the output as its `return`. Each `def forward`
is one graph; an artifact may hold several (forward / backward sections, nested subgraphs), told
apart by a `graph` label and ids prefixed with it. A node's user line comes from the artifact's
`src_lines`. The rows have the shape of the Dynamo node table, plus `id` and `graph`; their module
stacks come from the artifact's `modules` (node id -> stack) where the engine recorded them.

One compile's graph text is read by several parts (the op census, saved activations, node links,
graph views): `parse_graphs` keeps the last few parses, by the text, so that they share one parse
of it, and so do the equal texts of a recompile (a recompile that Inductor's caches answer prints
the same graphs again); `fx_nodes` keeps its rows with the parse.
"""

from __future__ import annotations

import re
import sys
from collections import OrderedDict

BANNER = re.compile(r"^# ===== (?P<label>.+) =====$")
CLASS = re.compile(r"^\s*class (?P<name>[^(]+)\(")
FORWARD = re.compile(r"^\s*def forward\((?P<params>.*)$")
PARAM = re.compile(r'(?P<name>[A-Za-z_]\w*)(?:\s*:\s*"(?P<type>[^"]*)")?')
ASSIGN = re.compile(r'^\s+(?P<name>[A-Za-z_]\w*)(?:\s*:\s*"(?P<type>[^"]*)")?\s*=\s*(?P<expr>.+)$')
DECLARE = re.compile(r'^\s+(?P<name>[A-Za-z_]\w*)\s*:\s*"(?P<type>[^"]*)"\s*(?:#.*)?$')
# Joint graphs take pytree inputs: `primals_1, primals_2, = fx_pytree.tree_flatten_spec(...)`.
UNPACK = re.compile(r"^\s+(?P<names>(?:[A-Za-z_]\w*,\s*)+[A-Za-z_]?\w*)\s*=\s*"
                    r"fx_pytree\.tree_flatten_spec\((?P<args>.*)\)")
RELEASE = re.compile(r";\s+(?:\w+ = )+None\s*$")  # FX frees dead values: `;  a = b = None`
STRING = re.compile(r"'[^']*'|\"[^\"]*\"")
NAME = re.compile(r"(?<![\w.])(?P<name>[A-Za-z_]\w*)(?!\s*=[^=])")
CALLEE = re.compile(r"^(?P<callee>[A-Za-z_][\w.]*)\(")
TYPE = re.compile(r"^(?P<dtype>[a-z]+\d*)\[(?P<shape>[^\]]*)\]")
DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
          "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8",
          "b8": "bool", "c64": "complex64", "c128": "complex128"}


def parse_type(text: str | None) -> tuple[list[str] | None, str | None]:
    """`f32[8, 16][16, 1]cpu` -> (["8", "16"], "float32"); `Sym(s0)` -> (None, "Sym")."""
    if not text:
        return None, None
    if text.startswith("Sym("):
        return None, "Sym"
    match = TYPE.match(text)
    if not match:
        return None, None
    shape = [d.strip() for d in match["shape"].split(",") if d.strip()]
    return shape, DTYPES.get(match["dtype"], match["dtype"])


def _op_and_target(expr: str) -> tuple[str, str]:
    callee = CALLEE.match(expr)
    if callee:
        name = callee["callee"]
        if name.startswith("self."):
            return "call_module", name.removeprefix("self.")
        return "call_function", name.removeprefix("torch.ops.")
    if expr.startswith("self."):
        return "get_attr", expr.removeprefix("self.")
    if re.match(r"^\w+\[\d+\]$", expr):
        return "call_function", "getitem"
    return "call_function", expr[:60]


def _names(expr: str, known: dict) -> list[str]:
    """The known nodes `expr` names, in order, each as its node's own name string (one string
    however many nodes take it as an input)."""
    return [known[name]["name"] for name in dict.fromkeys(
        m["name"] for m in NAME.finditer(STRING.sub("", expr))) if name in known]


class _Graph:
    """One `def forward`: its nodes by name, in order, each made as the row `fx_nodes` gives (a
    text's graphs and rows are one set of dicts, not two)."""

    def __init__(self, label: str):
        self.label = label
        self.nodes: dict[str, dict] = {}
        self.declared: dict[str, str] = {}  # types of names declared before they are bound
        # Shared by the nodes (read, never changed, as the rows are): one shape list per type
        # text, one empty module stack (a text prints none)
        self.types: dict[str | None, tuple] = {}
        self.no_modules: list = []

    def add(self, name: str, op: str, target: str, type_text: str | None, line, inputs) -> None:
        if type_text not in self.types:
            self.types[type_text] = parse_type(type_text)
        shape, dtype = self.types[type_text]
        # Ten keys: an eleventh (`module`, None) would double the dict's table (272 -> 464
        # bytes); a row without it has no module, as readers take it (`stage_nodes` adds it)
        self.nodes[name] = {"name": name, "op": op, "target": sys.intern(target),
                            "shape": shape, "dtype": dtype, "line": line, "inputs": inputs,
                            "id": name, "graph": self.label, "modules": self.no_modules}

    def rename(self, old: str, new: str) -> None:
        """Dynamo prints each placeholder's FX name as an alias, `l_x_ = L_x_`: one node."""
        self.nodes = {(new if name == old else name): ({**node, "name": new, "id": new}
                                                       if name == old else node)
                      for name, node in self.nodes.items()}


def _statement(lines: list[str], start: int) -> tuple[str, int]:
    """A statement that may continue over lines while brackets are open; returns (text, end)."""
    text, depth, index = "", 0, start
    while index < len(lines):
        part = lines[index].split("  #", 1)[0]
        text += " " + part.strip()
        depth += part.count("(") + part.count("[") - part.count(")") - part.count("]")
        if depth <= 0:
            break
        index += 1
    return text.strip(), index


PARSES_KEPT = 8  # one compile's graph texts (Dynamo, AOT joint, forward, backward, post-grad)
_parsed: OrderedDict[str, dict] = OrderedDict()  # text -> its src_lines, graphs and node rows


def _kept_parse(text: str, src_lines: list) -> dict:
    """The kept parse of the text with these line numbers (made now if none is kept)."""
    kept = _parsed.get(text)
    if kept is not None and kept["src_lines"] == src_lines:
        _parsed.move_to_end(text)
        return kept
    graphs = _parse_graphs(text, src_lines)
    kept = {"src_lines": list(src_lines), "graphs": graphs,
            "rows": [node for graph in graphs for node in graph.nodes.values()]}
    _parsed[text] = kept
    _parsed.move_to_end(text)
    while len(_parsed) > PARSES_KEPT:
        _parsed.popitem(last=False)
    return kept


def parse_graphs(text: str, src_lines: list) -> list[_Graph]:
    """The graphs of an FX text. Shared: callers read the graphs and never change them."""
    return _kept_parse(text, src_lines)["graphs"]


def _parse_graphs(text: str, src_lines: list) -> list[_Graph]:
    lines = text.split("\n")
    graphs: list[_Graph] = []
    section, classes, current = None, [], None  # classes: (indent, name) of the open classes
    index = 0
    while index < len(lines):
        line = lines[index]
        line_no = src_lines[index] if index < len(src_lines) else None
        if (banner := BANNER.match(line)):
            section = banner["label"]
        elif (klass := CLASS.match(line)):
            indent = len(line) - len(line.lstrip())
            classes = [c for c in classes if c[0] < indent] + [(indent, klass["name"].strip())]
        elif FORWARD.match(line):
            signature, index = _statement(lines, index)
            nested = [name for _, name in classes[1:]]
            current = _Graph(" ".join(filter(None, [section, *nested])))
            graphs.append(current)
            for param in PARAM.finditer(signature.split("(", 1)[1]):
                if param["name"] != "self":
                    current.add(param["name"], "placeholder", param["name"], param["type"],
                                None, [])
        elif current is not None and line.strip().startswith("return"):
            statement, index = _statement(lines, index)
            current.add("output", "output", "output", None, None,
                        _names(statement.removeprefix("return"), current.nodes))
        elif current is not None and (declared := DECLARE.match(line)):
            current.declared[declared["name"]] = declared["type"]
        elif current is not None and (unpack := UNPACK.match(line)):
            for name in _names(unpack["args"], current.nodes):  # the pytree stands for its leaves
                del current.nodes[name]
            for name in filter(None, (n.strip() for n in unpack["names"].split(","))):
                current.add(name, "placeholder", name, current.declared.get(name), None, [])
        elif current is not None and (node := ASSIGN.match(line)):
            expr = RELEASE.sub("", node["expr"]).strip()
            if current.nodes.get(expr, {}).get("op") == "placeholder":
                current.rename(expr, node["name"])
            else:
                op, target = _op_and_target(expr)
                current.add(node["name"], op, target, node["type"], line_no,
                            _names(expr, current.nodes))
        index += 1
    named = [graph for graph in graphs if graph.nodes]
    for graph in named if len(named) > 1 else []:  # ids and inputs name their graph
        for node in graph.nodes.values():
            node["id"] = f"{graph.label}:{node['name']}"
        for node in graph.nodes.values():  # an input's id string is its node's
            node["inputs"] = [graph.nodes[name]["id"] if name in graph.nodes
                              else f"{graph.label}:{name}" for name in node["inputs"]]
    return graphs


def fx_nodes(text: str, src_lines: list) -> list[dict]:
    """Node rows of every graph in an FX text; ids are `graph:name` when there are several.
    A row's module stack is empty: the text prints none (`stage_nodes` adds a stage's own).
    Shared, as the parse is: callers read the rows and never change them."""
    return _kept_parse(text, src_lines)["rows"]


def stage_nodes(artifact: dict) -> list[dict]:
    """Node rows of a graph stage: the engine's table for Dynamo, else parsed from the text
    (shared where the stage has no module stacks: callers read the rows, never change them)."""
    if artifact.get("nodes"):
        return [{"modules": [], **node, "id": node["name"], "graph": ""}
                for node in artifact["nodes"]]
    modules = artifact.get("modules") or {}
    if not modules:  # no module stacks (a log's graphs): the rows kept with the parse, shared
        return fx_nodes(artifact["text"], artifact.get("src_lines") or [])
    rows = []
    for row in fx_nodes(artifact["text"], artifact.get("src_lines") or []):
        stack = modules.get(row["id"], [])
        rows.append({**row, "modules": stack, "module": stack[-1][0] if stack else None})
    return rows
