"""What the kernel attribution reads of a compile's texts (`attribution.py`): the op each Dynamo
graph node calls, with its user line, and the ATen ops an output code calls itself; and the name
both sides give an op (`op_key`), eager's profile (`aten::relu_`) and Dynamo's graph (`relu`).
"""

from __future__ import annotations

import re

OPERATORS = {"*": "mul", "+": "add", "-": "sub", "/": "div", "@": "matmul", "**": "pow",
             "//": "floor_divide", "%": "remainder"}
ALIASES = {"iadd": "add", "imul": "mul", "isub": "sub", "itruediv": "div", "truediv": "div",
           "floordiv": "floor_divide", "imatmul": "matmul"}
# Tensor methods an eager profile records as `aten::to` (`x.float()`; its `aten::_to_copy` inside)
CASTS = {"float", "double", "half", "bfloat16", "int", "long", "short", "bool", "byte", "char",
         "cpu", "cuda", "type"}
NODE_LINE = re.compile(r'^\s+(?P<node>\w+)(?::\s*"[^"]*")?\s*=\s*(?P<expr>.*?)'
                       r'(?:;\s+\w+(?:\s*=\s*\w+)*\s*=\s*None)?\s*$')
CALL = re.compile(r"^(?P<callee>[\w.]+)\(")
BINARY = re.compile(r"^[\w.]+ (?P<op>\*\*|//|[*+\-/@%]) [\w.]+$")
# FX writes `operator.iadd(a, b)` as `a += b;  iadd = a`
INPLACE = re.compile(r"^\s+[\w.]+ (?P<op>\*\*|//|[*+\-/@%])= [\w.]+;\s+(?P<node>\w+)")
FALLBACK_CALL = re.compile(r"^[ \t]+\w+ = torch\.ops\.aten\.(?P<op>\w+)\.\w+\(", re.M)
FILE_COMMENT = re.compile(r"^\s+# File: (?P<file>.*?):(?P<line>\d+) in ")
SOURCE_NODES = re.compile(r"# Topologically Sorted Source Nodes: \[(?P<nodes>[^\[\]\n]*)\]")


def op_key(name: str) -> str:
    """An op's name as both sides can share it: `aten::relu_` and Dynamo's `relu` as `relu`."""
    name = name.removeprefix("aten::")
    name = ALIASES.get(name, name)
    return name.rstrip("_") or name


def node_op(expr: str) -> str | None:
    """The op a Dynamo graph node calls, from its line's right-hand side."""
    call = CALL.match(expr)
    if call:
        owner, _, method = call["callee"].rpartition(".")
        return "to" if owner and method in CASTS else op_key(method)
    binary = BINARY.match(expr)
    return OPERATORS[binary["op"]] if binary else None


def dynamo_nodes(text: str, user_file: str) -> list[tuple[str, str, int | None]]:
    """(node, op, user line) of each call in a Dynamo graph's text, in graph order; the line
    from the `# File:` comment above it, where that is the user's file."""
    out, user_line = [], None
    for line in text.splitlines():
        comment = FILE_COMMENT.match(line)
        if comment:
            user_line = int(comment["line"]) if comment["file"] == user_file else None
            continue
        inplace = INPLACE.match(line)
        if inplace:
            out.append((inplace["node"], OPERATORS[inplace["op"]], user_line))
            continue
        match = NODE_LINE.match(line)
        op = node_op(match["expr"]) if match else None
        if op:
            out.append((match["node"], op, user_line))
    return out


def fallback_kernels(output_code: str) -> list[dict]:
    """ATen ops the output code calls itself (`torch.ops.aten.X.default(...)`), with the Dynamo
    nodes of the comment above each call."""
    out: dict[str, dict] = {}
    for match in FALLBACK_CALL.finditer(output_code):
        before = output_code[max(0, match.start() - 600):match.start()]
        sources = SOURCE_NODES.findall(before)
        nodes = [n.strip() for n in sources[-1].split(",")] if sources else []
        kernel = out.setdefault(match["op"], {"name": f"torch.ops.aten.{match['op']}",
                                              "kind": "fallback", "nodes": [], "lines": [],
                                              "dynamo_nodes": []})
        kernel["dynamo_nodes"] += [n for n in nodes if n and n not in kernel["dynamo_nodes"]]
    return list(out.values())


