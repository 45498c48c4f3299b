"""The `def` line of a function of the user's script, for the frame a compile names.

A decorated function's code object starts at its first decorator: `co_firstlineno` of
`@torch.compile` / `def f(x):` on lines 4-5 is 4 (Python 3.8+), and Dynamo's `dynamo_start`
stack and the bytecode hook both give that line. The script's own source (the job wrote it to
the file it runs, so `linecache` reads it) says where the `def` is: `ast` gives a function its
decorators' lines and its own.
"""

from __future__ import annotations

import ast
import functools
import linecache


@functools.lru_cache(maxsize=2)
def _def_lines(source: str) -> dict[tuple[str, int], int]:
    """(name, first line of its code object) -> the `def` / `class` line, for each one in
    the source (parsed once per job: each compile asks)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a notebook cell's text as linecache has it may hold IPython syntax
        return {}
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            found[(node.name, first)] = node.lineno
    return found


def def_line(code, user_file: str) -> int | None:
    """The `def` line of `code` when it is a function of the user's file, else None."""
    if code.co_filename != user_file:
        return None
    source = "".join(linecache.getlines(user_file))
    return _def_lines(source).get((code.co_name, code.co_firstlineno))
