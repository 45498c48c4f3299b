"""torchbolt in a notebook: `%load_ext torchbolt`, then a cell that starts with

    %%torchbolt [--device cpu|cuda] [--mode ...] [--measure/--no-measure] [--gpu-preview] ...

runs the cell's code through the engine, as any job (in the sandbox, in a fresh process of the
worker's), and shows the result inline: a progress line while it runs (each stage as it
arrives), then the same self-contained report `torchbolt report` writes, in an iframe, working
offline. `%torchbolt report PATH` writes the last cell's report to a file.

Where the sandbox is missing (no bubblewrap), a cell refuses to run and says why, unless it
is given `--unsafe-no-sandbox`: then it runs as the notebook's user, and its progress line says
so. Each cell's last progress line says whether it ran sandboxed.

The cell runs in a fresh process, not in the notebook's kernel, so it sees none of the
notebook's variables or imports: it must be a whole script. A NameError says so and names the
missing name. The flags are the CLI's (`options.add_flags`, from the one option spec). In a
plain IPython terminal the cell shows a text summary instead of the report.

IPython is needed only here (`pip install torchbolt[notebook]`); nothing else imports this.
"""

from __future__ import annotations

import argparse
import atexit
import html
import shlex
import time

from .errors import ErrorKind
from .options import add_flags, from_flags
from .report.result import build_result
from .present.static_html import write_report
from .supervisor import sandbox
from .supervisor.worker import Worker, WorkerError

CELL_FILE = "cell.py"  # the name errors and stages give the cell's code
SESSIONS: dict[int, "Session"] = {}  # per IPython shell (one in a kernel)
IFRAME_HEIGHT_PX = 640


class Session:
    """The notebook's warm worker (started at the first cell, closed with the kernel) and the
    last cell's run, for `%torchbolt report`."""

    def __init__(self) -> None:
        self.worker: Worker | None = None
        self.last: tuple[str, dict, dict] | None = None  # source, options, result

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            atexit.unregister(self.worker.close)
            self.worker = None

    def run(self, source: str, options, listener) -> dict:
        if self.worker is None:
            self.worker = Worker().start()
            atexit.register(self.worker.close)
        try:
            result = self.worker.run(source, options, user_file=CELL_FILE, listener=listener)
        except WorkerError as exc:
            result = build_result([], CELL_FILE, {"options": options.to_dict(),
                                                  "error": ErrorKind.WORKER_ERROR.error(str(exc))})
        self.last = (source, options.to_dict(), result)
        return result


def cell_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="%%torchbolt",
                                     description="Run the cell under torch.compile with torchbolt.")
    add_flags(parser)
    parser.add_argument("--unsafe-no-sandbox", action="store_true",
                        help="where the sandbox (bubblewrap) is missing, run the cell anyway, "
                             "as this notebook's user, with access to all of their files")
    return parser


def sandbox_refusal(unsafe: bool) -> str | None:
    """Why the cell must not run (no sandbox, and not `unsafe`), else None."""
    check = sandbox.check()
    if check.ok or unsafe:
        return None
    return (f"torchbolt: the cell did not run: the sandbox is not available here "
            f"({check.reason}). `%%torchbolt --unsafe-no-sandbox ...` runs it without the "
            "sandbox, as this notebook's user (the code can then read and change your files).")


def how_it_ran(worker: Worker) -> str:
    if worker.sandboxed:
        return "sandboxed"
    return f"NOT sandboxed, ran as this notebook's user: {sandbox.check().reason}"


class Progress:
    """One line updated in place: what the job is doing, each stage as it arrives."""

    def __init__(self, display) -> None:
        self._display, self._started, self._stages = display, time.monotonic(), []
        self._handle = display(self._bundle("starting the worker ..."), raw=True, display_id=True)

    def _bundle(self, text: str) -> dict:
        line = f"torchbolt [{time.monotonic() - self._started:5.1f}s] {text}"
        return {"text/plain": line, "text/html": f"<code>{html.escape(line)}</code>"}

    def __call__(self, event: dict) -> None:
        if event["type"] == "status":
            text = "running the cell ..."
        elif event["type"] == "stage":
            self._stages.append(f"{event['compile_id'] or '-'} {event['stage']}")
            text = f"{len(self._stages)} stages; last: {self._stages[-1]}"
        elif event["type"] == "phase":
            text = f"{len(self._stages)} stages; {event['step']} ..."
        else:
            return
        self._handle.update(self._bundle(text), raw=True)

    def done(self, text: str) -> None:
        self._handle.update(self._bundle(text), raw=True)


def summary(result: dict) -> str:
    """The result in a few lines of text (a terminal, or the report's alt text)."""
    lines = [f"{len(result['compiles'])} compiles, {len(result['graph_breaks'])} graph breaks, "
             f"{len(result['recompiles'])} recompiles"]
    lines += [f"  {c['id']} {c['frame'].get('name') or ''}: {', '.join(c['stages'])}"
              for c in result["compiles"]]
    lines += [f"  graph break at line {b['line']}: {b.get('gb_type') or b['reason']}"
              for b in result["graph_breaks"]]
    error = result["error"]
    if error:
        line = f" (line {error['line']})" if error.get("line") else ""
        lines.append(f"error: {error['type']}{line}: {error['message']}")
    return "\n".join(lines)


def explain_name_error(result: dict) -> None:
    """A NameError in a cell is most often a name the notebook defined: say why it is missing."""
    error = result["error"]
    if error and error["type"] == "NameError":
        error["message"] += (" (the cell runs in a fresh process, not in the notebook's kernel: "
                             "define or import every name it uses in the cell itself)")


class EscapedParts:
    """A text file that keeps what is written to it HTML-escaped, in the parts written (escaping
    is per character, so the parts joined are the whole text escaped)."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> None:
        self.parts.append(html.escape(text, quote=True))


def report_iframe(source: str, options: dict, result: dict) -> str:
    """The report, self-contained, in an iframe of the notebook's output (no network): written
    as `torchbolt report` writes it, escaped as it is made, joined once."""
    escaped = EscapedParts()
    write_report(escaped, source, options, result)
    return "".join(['<iframe srcdoc="', *escaped.parts, '" title="torchbolt report" ',
                    f'style="width:100%;height:{IFRAME_HEIGHT_PX}px;border:1px solid #ccc">'
                    '</iframe>'])


def load_ipython_extension(ipython) -> None:
    from IPython.display import display

    session = SESSIONS[id(ipython)] = Session()

    def torchbolt(line: str, cell: str | None = None):
        """%%torchbolt [flags] runs the cell; %torchbolt report PATH writes the last report."""
        words = shlex.split(line)
        if cell is None:
            return save_report(session, words)
        try:
            flags = cell_parser().parse_args(words)
            options = from_flags(flags)
        except SystemExit:  # argparse printed what is wrong (or the help)
            return None
        refusal = sandbox_refusal(flags.unsafe_no_sandbox)
        if refusal:
            display({"text/plain": refusal, "text/html": f"<pre>{html.escape(refusal)}</pre>"},
                     raw=True)
            return None
        progress = Progress(display)
        result = session.run(cell, options, progress)
        explain_name_error(result)
        ended = "done" if not result["error"] else f"ended: {result['error']['type']}"
        progress.done(f"{ended} ({how_it_ran(session.worker)})")
        display({"text/plain": summary(result),
                 "text/html": report_iframe(cell, options.to_dict(), result)}, raw=True)

    ipython.register_magic_function(torchbolt, magic_kind="line_cell", magic_name="torchbolt")


def unload_ipython_extension(ipython) -> None:
    """`%unload_ext torchbolt`: the notebook's worker stops (its zygote and job processes)."""
    session = SESSIONS.pop(id(ipython), None)
    if session is not None:
        session.close()


def save_report(session: Session, words: list[str]) -> str:
    """`%torchbolt report PATH`: the last cell's report, written to the file as it is made."""
    if len(words) != 2 or words[0] != "report":
        raise ValueError("usage: %torchbolt report PATH (after a %%torchbolt cell)")
    if session.last is None:
        raise ValueError("no %%torchbolt cell has run yet")
    with open(words[1], "w", encoding="utf-8") as fh:
        write_report(fh, *session.last)
    return f"wrote {words[1]}"
