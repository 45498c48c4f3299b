"""The `torchbolt` command: `torchbolt serve [...]` (the web explorer, `python -m app`),
`torchbolt run SCRIPT.py [...]` and `torchbolt report ...` (the engine's CLI,
`python -m compiler_core run|report`), and `torchbolt worker --broker URL` (a worker host serving
the web servers on that Redis, in this interpreter's torch: `python -m compiler_core worker`).

Each subcommand loads only its own side: `run` and `report` never import Flask. In IPython or
Jupyter, `%load_ext torchbolt` adds the `%%torchbolt` cell magic (compiler_core/notebook.py).
"""

from __future__ import annotations

import sys

USAGE = """usage: torchbolt {serve,run,report,worker} ...

  serve   serve the web explorer (torchbolt serve --help)
  run     run SCRIPT.py under torch.compile and write every stage as JSON (torchbolt run --help)
  report  write one self-contained HTML report of SCRIPT.py's run or of a TORCH_TRACE log folder
          (torchbolt report --help)
  worker  run jobs for the web servers of a Redis broker, in this Python's torch
          (torchbolt worker --help)
"""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command, rest = (argv[0], argv[1:]) if argv else (None, [])
    if command == "serve":
        from app.__main__ import main as serve
        return serve(rest, prog="torchbolt serve") or 0
    if command in ("run", "report", "worker"):
        from compiler_core.__main__ import main as engine
        return engine([command, *rest], prog="torchbolt")
    print(USAGE, file=sys.stderr if command not in ("-h", "--help") else sys.stdout, end="")
    return 0 if command in ("-h", "--help") else 2


def load_ipython_extension(ipython) -> None:
    """`%load_ext torchbolt` in IPython or Jupyter: the `%%torchbolt` cell magic
    (compiler_core/notebook.py)."""
    from compiler_core import load_ipython_extension as load
    load(ipython)


def unload_ipython_extension(ipython) -> None:
    from compiler_core import unload_ipython_extension as unload
    unload(ipython)


if __name__ == "__main__":
    sys.exit(main())
