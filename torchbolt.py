"""The `torchbolt` command: `torchbolt serve [...]` (the web explorer, `python -m app`) and
`torchbolt run SCRIPT.py [...]` (the engine's CLI, `python -m compiler_core run`).

Each subcommand loads only its own side: `run` never imports Flask.
"""

from __future__ import annotations

import sys

USAGE = """usage: torchbolt {serve,run} ...

  serve   serve the web explorer (torchbolt serve --help)
  run     run SCRIPT.py under torch.compile and write every stage as JSON (torchbolt run --help)
"""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command, rest = (argv[0], argv[1:]) if argv else (None, [])
    if command == "serve":
        from app.__main__ import main as serve
        return serve(rest) or 0
    if command == "run":
        from compiler_core.__main__ import main as engine
        return engine(["run", *rest])
    print(USAGE, file=sys.stderr if command not in ("-h", "--help") else sys.stdout, end="")
    return 0 if command in ("-h", "--help") else 2


if __name__ == "__main__":
    sys.exit(main())
