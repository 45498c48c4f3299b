"""What a stage is, declared once: each stage module lists one `Stage` per stage it produces.

Everything else derives from these specs: the stage order, which record announces a stage
(progress lines and live events), which stages are FX graphs (the page's graph drawing), the
titles and languages of the artifacts, and the page's labels (through the catalogue).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Stage:
    name: str
    label: str  # short name, for menus
    title: str  # the artifact's title
    language: str  # of the text: python, pycon, text, json, cpp, mlir, llvm, ptx, sass
    records: tuple[str, ...] = ()  # the first of these records of a compile announces the stage
    graph: bool = False  # an FX graph: nodes and edges can be drawn
    field: str = "stages"  # where a compile holds it ("kernels"; "timings" is the run's)
    option: str | None = None  # the run option without which the stage is left out

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "records"}
