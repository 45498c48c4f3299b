"""PyTorch's compile ids as the result writes them, kept apart where PyTorch repeats them.

PyTorch numbers compiles `frame_id/frame_compile_id` (`!N` and `!N/frame_id/frame_compile_id`
with compiled autograd) and numbers them again from `0/0` after `torch._dynamo.reset()` (or
`torch.compiler.reset()`): a script that compiles, resets and compiles again has two compiles
`0/0`, which PyTorch's logs both call `[0/0]` and tlparse files under one `[0/0]`. The
structured trace has no entry for the reset, but each compile logs one start (`dynamo_start`,
`compiled_autograd_graph` for a compiled autograd graph), once however often its analysis
restarts; so an id that starts a second time is where the numbering began again. From there the
result writes PyTorch's id after `[reset N] `, N the times the numbering began again (the resets
after which the script compiled): `[reset 1] 0/0`. No two compiles share an id, and a frame's
compiles still share their frame part (`[reset 1] 0`), as a multi-process log's name their rank
(`[rank 1] 0/0`, report/ranks.py).
"""

from __future__ import annotations

import re

STARTS = frozenset({"dynamo_start", "compiled_autograd_graph"})
RESTARTED = re.compile(r"^\[reset \d+\] ")


class CompileIds:
    """One process's numbering of compiles, read in the order PyTorch logged them."""

    def __init__(self) -> None:
        self.restarts = 0
        self.started: set[str] = set()  # the ids started since the numbering last began

    def start(self, name: str, pytorch_id: str | None) -> None:
        """Note a trace entry: an id that starts twice begins a new numbering."""
        if name not in STARTS or pytorch_id is None:
            return
        if pytorch_id in self.started:
            self.restarts += 1
            self.started = set()
        self.started.add(pytorch_id)

    def of(self, pytorch_id: str | None) -> str | None:
        """The result's id of a compile PyTorch calls `pytorch_id` now."""
        if pytorch_id is None or not self.restarts:
            return pytorch_id
        return f"[reset {self.restarts}] {pytorch_id}"


def renumbered(records: list[dict]) -> list[dict]:
    """Records (in the order they were logged) with the ids of each later numbering marked; the
    same records where no id starts twice (a job's records are marked as they are made)."""
    ids, out = CompileIds(), []
    for record in records:
        ids.start(record["name"], record.get("compile_id"))
        marked = ids.of(record.get("compile_id"))
        out.append(record if marked == record.get("compile_id") else
                   {**record, "compile_id": marked})
    return out


def beside(compile_id: str | None, pytorch_id: str) -> str:
    """A compile id PyTorch printed in a compile's text (a recompile's reason names the cache
    entry it missed), in that compile's numbering."""
    marked = RESTARTED.match(compile_id or "")
    return marked.group(0) + pytorch_id if marked else pytorch_id
