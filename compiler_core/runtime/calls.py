"""The guard cache at work: each call the script makes to a compiled callable, and which of
Dynamo's cache entries served it. One `call` record per call, in order:
`{"callable", "line", "arguments", "outcome", "compile_id", "entries"}`.

Where the facts come from (torch 2.11-2.13):
- the compiles a call started: the structured trace's `dynamo_start` events that arrived while
  the call ran (`CaptureSession.started`), its own and no nested compiled call's;
- the entry that served the callable's own frame: Dynamo keeps each code object's cache
  entries most recently used first (`lookup` moves the entry whose guards passed to the front,
  a new entry is put there), so after the call the first entry of
  `_debug_get_cache_entry_list(code)` is the one that ran, with its `compile_id`. The code
  object is the one Dynamo intercepted for the callable (the bytecode hook's, see
  `CaptureSession.codes`): the function's own, or `forward` for a module.

`arguments`: the call's arguments by parameter name, described as `compiled_call` records do
(`{"x": "float32[4] cpu", "k": "2"}`), the names Dynamo's guards give the frame's locals.

Outcome: `compile` when the call's first new entry is the first of its frame (`N/0`),
`recompile` when its frame had entries before (`N/k`, k > 0: guards failed, or a resume
function's did), `hit` when the call compiled nothing and an entry served it, `eager` when no
entry did (Dynamo skipped the frame). `compile_id`: the call's first new entry, else the entry
that served the callable's own frame. `entries`: that own-frame entry first, then every other
entry the call compiled (resume functions after graph breaks, frames of functions it called).
On a hit, the resume functions' entries that ran are served from their own caches and cannot be
told apart after the call, so only the own frame's entry is listed then.
"""

from __future__ import annotations

from torch._C._dynamo.eval_frame import _debug_get_cache_entry_list

from .session import CaptureSession

MAX_CALLS = 300  # a script's loop would otherwise fill the timeline


def _entry_id(code) -> str | None:
    """The compile id of the cache entry Dynamo used last for `code`, as the trace writes it."""
    entries = _debug_get_cache_entry_list(code)
    if not entries:
        return None
    cid = entries[0].compile_id
    return f"{cid.frame_id}/{cid.frame_compile_id}"


def _is_first_of_frame(compile_id: str) -> bool:
    return compile_id.rsplit("/", 1)[-1] == "0"


class CallTimeline:
    """Opened and closed around each call of a compiled callable (`CompileRecorder`)."""

    def __init__(self, session: CaptureSession):
        self.session = session
        self.open: list[dict | None] = []  # a compiled call can call another from eager code
        self.claimed: set[str] = set()  # compile ids a nested call already reported
        self.own_code: dict[int, object] = {}  # callable index -> the code Dynamo intercepts
        self.count = 0

    def begin(self, callable_index: int, line: int | None, arguments) -> None:
        """`arguments()`: the call's arguments by name, asked for only when the call is
        recorded (a recompile's reason names a changed argument, not its new value)."""
        recording = self.session.recording and self.count < MAX_CALLS
        if recording and self.count == MAX_CALLS - 1:
            self.session.writer.emit("note", None, None, text=(
                f"The calls timeline lists the first {MAX_CALLS} calls of compiled callables."))
        self.count += recording
        self.open.append({"callable": callable_index, "line": line, "arguments": arguments(),
                          "start": len(self.session.started)} if recording else None)

    def end(self) -> None:
        call = self.open.pop()
        if call is None:
            return  # torchbolt's own call (timing), or past the limit
        index = call.pop("callable")
        compiled = [cid for cid in self.session.started[call.pop("start"):]
                    if cid not in self.claimed]
        self.claimed.update(compiled)
        if index not in self.own_code and compiled and compiled[0] in self.session.codes:
            self.own_code[index] = self.session.codes[compiled[0]]
        code = self.own_code.get(index)
        own = _entry_id(code) if code is not None else None
        if compiled:
            outcome = "compile" if _is_first_of_frame(compiled[0]) else "recompile"
        else:
            outcome = "hit" if own else "eager"
        entries = list(dict.fromkeys([cid for cid in [own, *compiled] if cid]))
        self.session.writer.emit("call", None, None, callable=index, **call, outcome=outcome,
                                 compile_id=compiled[0] if compiled else own, entries=entries)
