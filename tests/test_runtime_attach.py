"""The job process attaches each feature's runtime hook by name ("runtime.module:function"): a
name that does not resolve, or a function that is not one of the session, would fail every job
at its start, so both are checked here without running one. The session module imports none of
the hook modules (they import it), which keeps the two free of import cycles."""

import ast
import importlib
import inspect
from pathlib import Path

from compiler_core.features import ATTACHMENTS
from compiler_core.runtime import session


def _resolve(target: str):
    module, function = target.split(":")
    return getattr(importlib.import_module(f"compiler_core.{module}"), function)


def test_every_attachment_is_a_function_of_the_session():
    assert len(set(ATTACHMENTS)) == len(ATTACHMENTS)
    for target in ATTACHMENTS:
        assert len(inspect.signature(_resolve(target)).parameters) == 1, target


def test_the_session_imports_no_hook_module():
    tree = ast.parse(Path(session.__file__).read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module is None and node.level == 1 for alias in node.names}
    imported |= {node.module for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module}
    hooks = {target.split(":")[0].removeprefix("runtime.").split(".")[0] for target in ATTACHMENTS}
    assert not imported & hooks
