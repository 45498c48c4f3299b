"""The notebook's reports are `torchbolt report`'s file, written as they are made (the notebook
itself, through a real Jupyter kernel, is tests/test_notebook.py)."""

from __future__ import annotations

import html
import io
import os

import pytest

from compiler_core import notebook
from compiler_core.present.static_html import write_report
from compiler_core.report.result import build_result
from compiler_core.wire import read_records

HERE = os.path.dirname(__file__)
USER_FILE = "/work/main/compiler_core/gallery/01_print_graph_break.py"  # as in that run
SOURCE = "import torch\n# the cell\n"


@pytest.fixture(scope="module")
def last_cell():
    """(source, options, result) of a real run, as a session keeps its last cell's."""
    records = read_records(os.path.join(HERE, "data", "print_graph_break.records.jsonl"))
    return SOURCE, {"device": "cpu"}, build_result(records, USER_FILE)


@pytest.fixture(scope="module")
def cli_report(last_cell) -> str:
    """The file `torchbolt report` writes for the same run (compiler_core/__main__.py)."""
    out = io.StringIO()
    write_report(out, *last_cell)
    return out.getvalue()


def test_the_last_report_is_the_clis_file_written_as_it_is_made(last_cell, cli_report,
                                                                 tmp_path, monkeypatch):
    writes: list[int] = []

    class Spied:
        """The file, its writes' sizes noted."""

        def __init__(self, *args, **kwargs):
            self.file = open(*args, **kwargs)

        def write(self, text: str) -> None:
            writes.append(len(text))
            self.file.write(text)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.file.close()

    monkeypatch.setattr(notebook, "open", Spied, raising=False)
    session = notebook.Session()
    session.last = last_cell
    path = tmp_path / "explored.html"
    assert notebook.save_report(session, ["report", str(path)]) == f"wrote {path}"
    assert path.read_text(encoding="utf-8") == cli_report
    assert max(writes) < len(cli_report)  # in parts, never the whole file as one string


def test_the_cells_iframe_holds_the_clis_file(last_cell, cli_report):
    frame = notebook.report_iframe(*last_cell)
    assert frame.startswith(f'<iframe srcdoc="{html.escape(cli_report, quote=True)}" ')
    assert frame.endswith("></iframe>")
