"""The guard cache at work: each call the script makes to a compiled callable, and what really
ran for it. One `call` record per call, in order: `{"callable", "line", "arguments", "outcome",
"compile_id", "entries", "eager_reason", "limit", "error"}`.

Where the facts come from (torch 2.11-2.15):
- the compiles a call started: the structured trace's `dynamo_start` events that arrived while
  the call ran (`CaptureSession.started`), its own and no nested compiled call's; a compile
  that produced code is one the bytecode hook saw (`CaptureSession.codes`), one that did not
  is a frame Dynamo skipped ("No ops traced for the FX graph");
- whether a cache entry served the callable's own frame: Dynamo's guard-complete hook
  (`set_guard_complete_hook`, the seam of `torch.compiler.set_enable_guard_collectives`),
  which the eval-frame callback calls with `cache_hit` after each lookup of a frame that has
  cache entries. The own frame is looked up before any frame it runs, so the call's first
  lookup is its own when its code had entries as the call began. Which entry served it: Dynamo
  keeps each code object's entries most recently used first (`lookup` moves the entry whose
  guards passed to the front), so the first entry of `_debug_get_cache_entry_list(code)`
  after a hit. A miss leaves that list as it was: without the hook, an eager run after the
  recompile limit read as a hit of the first entry (issue 40). The code object is the one
  Dynamo compiled for the callable (`CaptureSession.codes`): the function's, or `forward`;
- the recompile limit: Dynamo's own warning "torch._dynamo hit config.%s (%s)" (logger
  `torch._dynamo.convert_frame`), its arguments the limit's name (`recompile_limit`,
  `accumulated_recompile_limit`) and value, under the compile id of the frame. From then on
  Dynamo only runs that frame's entries (`FrameAction.RUN_ONLY`): a miss runs it eagerly, or,
  with `fullgraph=True`, raises `FailOnRecompileLimitHit`.

`arguments`: the call's arguments by parameter name, described as `compiled_call` records do
(`{"x": "float32[4] cpu", "k": "2"}`), the names Dynamo's guards give the frame's locals.

Outcome: `compile` when the call's first new entry is the first of its frame (`N/0`),
`recompile` when its frame had entries before (`N/k`, k > 0: guards failed, or a resume
function's did), `hit` when an existing entry's guards passed for the own frame and the call
compiled nothing, `eager` when no compiled code ran for the own frame, `error` when the call
raised (`error`: the exception's type). `eager_reason`: `recompile_limit` (the frame hit the
limit that `limit` names, `{"name", "value"}`, as Dynamo logged it), `skipped` (Dynamo compiled
no entry for the frame), `run_only` (no entry's guards passed and Dynamo was told not to
compile: `set_stance("eager_on_recompile")`, `torch._dynamo.run()`), `dynamo_off` (the frame
has entries but Dynamo did not look: `set_stance("force_eager")`, a disabled region).
`compile_id`: the call's first new entry, else the entry that served the own frame, else a
skipped frame's attempt, else the own frame's compile that the limit stopped (the trace keeps
it as a compile whose failure is PyTorch's "Dynamo recompile limit exceeded"). `entries`: the entries that ran, the own frame's first, then every
other entry the call compiled (resume functions after graph breaks, functions it called). On a
hit, the resume functions' entries that ran are served from their own caches and cannot be
told apart after the call, so only the own frame's entry is listed then.
"""

from __future__ import annotations

import logging

from torch._C._dynamo.eval_frame import _debug_get_cache_entry_list, set_guard_complete_hook

from .session import CaptureSession

MAX_CALLS = 300  # a script's loop would otherwise fill the timeline
LIMIT_WARNING = "torch._dynamo hit config."  # convert_frame's, torch 2.11-2.15
CONVERT_FRAME_LOGGER = "torch._dynamo.convert_frame"


def _entry_ids(session: CaptureSession, code) -> list[str]:
    """The compile ids of `code`'s cache entries, most recently used first."""
    if code is None:
        return []
    return [session.compile_ids.of(str(e.compile_id)) for e in _debug_get_cache_entry_list(code)]


def _is_first_of_frame(compile_id: str) -> bool:
    return compile_id.rsplit("/", 1)[-1] == "0"


class RecompileLimitLog(logging.Handler):
    """Tells the timeline of Dynamo's "hit config.recompile_limit (8)" warnings; the warning
    still reaches the user's stderr as in a plain run."""

    def __init__(self, timeline: "CallTimeline"):
        super().__init__(logging.WARNING)
        self.timeline = timeline

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        if not (isinstance(record.msg, str) and record.msg.startswith(LIMIT_WARNING)
                and len(args) >= 2):
            return
        compile_id = self.timeline.session.compile_id()
        if compile_id is not None:
            value = args[1] if isinstance(args[1], int) else str(args[1])
            self.timeline.limit_hit(compile_id, {"name": str(args[0]), "value": value})


class CallTimeline:
    """Opened and closed around each call of a compiled callable (`CompileRecorder`)."""

    def __init__(self, session: CaptureSession):
        self.session = session
        self.open: list[dict | None] = []  # a compiled call can call another from eager code
        self.claimed: set[str] = set()  # compile ids a nested call already reported
        self.own_code: dict[int, object] = {}  # callable index -> the code Dynamo intercepts
        self.own_frame: dict[int, str] = {}  # callable index -> that code's frame id
        self.limits: dict[str, dict] = {}  # frame id -> the recompile limit it hit
        self.limit_attempts: list[str] = []  # the compile ids that hit it, in order
        self.count = 0
        self.hook = self._guards_checked
        self.previous_hook = None  # one the script set: still called, its answer Dynamo's

    def install(self) -> None:
        logging.getLogger(CONVERT_FRAME_LOGGER).addHandler(RecompileLimitLog(self))
        self._keep_hook()

    def limit_hit(self, compile_id: str, limit: dict) -> None:
        """Dynamo's compile `compile_id` stopped at `limit`: the trace keeps it as a compile
        whose failure is PyTorch's explanation of the limit."""
        self.limits[compile_id.split("/")[0]] = limit
        self.limit_attempts.append(compile_id)

    def uninstall(self) -> None:
        """Once the script has ended: the guard-complete hook as the script had it, so that
        timings run without ours (Dynamo calls it at every lookup of a compiled frame)."""
        current = set_guard_complete_hook(self.previous_hook)
        if current is not self.hook:  # the script set its own since the last call
            set_guard_complete_hook(current)

    def _keep_hook(self) -> None:
        """Installs the guard-complete hook again where the script set its own (e.g.
        `torch.compiler.set_enable_guard_collectives`): that one is chained, not lost (what the
        script can tell: that function's return, "was a hook set", reads True under ours)."""
        current = set_guard_complete_hook(self.hook)
        if current is not self.hook:
            self.previous_hook = current

    def _guards_checked(self, cache_hit: bool) -> bool:
        """Dynamo's guard-complete hook: the first lookup of a call whose own frame has
        entries is that frame's. Returns what Dynamo should do (True: keep the outcome)."""
        call = self.open[-1] if self.open else None
        if call is not None and call["own_entries"] and call["own_hit"] is None:
            call["own_hit"] = cache_hit
        return self.previous_hook(cache_hit) if self.previous_hook is not None else True

    def begin(self, callable_index: int, line: int | None, arguments) -> None:
        """`arguments()`: the call's arguments by name, asked for only when the call is
        recorded (a recompile's reason names a changed argument, not its new value)."""
        recording = self.session.recording and self.count < MAX_CALLS
        if recording and self.count == MAX_CALLS - 1:
            self.session.writer.emit("note", None, None, text=(
                f"The calls timeline lists the first {MAX_CALLS} calls of compiled callables."))
        self.count += recording
        if recording:
            self._keep_hook()
        self.open.append({"callable": callable_index, "line": line, "arguments": arguments(),
                          "start": len(self.session.started), "own_hit": None,
                          "limits_start": len(self.limit_attempts),
                          "own_entries": bool(_entry_ids(self.session, self.own_code.get(callable_index)))}
                         if recording else None)

    def end(self, raised: BaseException | None = None) -> None:
        """`raised`: the exception the call raised, if it did."""
        call = self.open.pop()
        if call is None:
            return  # torchbolt's own call (timing), or past the limit
        index = call.pop("callable")
        compiled = [cid for cid in self.session.started[call.pop("start"):]
                    if cid not in self.claimed]
        self.claimed.update(compiled)
        code = self.session.codes.get(compiled[0]) if compiled else None
        if code is not None and self.own_code.setdefault(index, code) is code:
            # its frame's id, again after `torch._dynamo.reset()` numbered the frames anew
            self.own_frame[index] = compiled[0].split("/")[0]
        frame = self.own_frame.get(index)
        stopped = [cid for cid in self.limit_attempts[call.pop("limits_start"):]
                   if cid.split("/")[0] == frame]  # the own frame's compile the limit stopped
        own_hit, own_entries = call.pop("own_hit"), call.pop("own_entries")
        made = [cid for cid in compiled if cid in self.session.codes]  # entries, not skips
        own = _entry_ids(self.session, self.own_code.get(index))[:1] if own_hit else []
        outcome, eager_reason = self._outcome(compiled, own_hit, own_entries, frame, raised)
        missed = own_hit is False or raised is not None
        compile_id = (made[0] if made and outcome != "hit"
                      else (own or compiled or stopped or [None])[0])
        self.session.writer.emit(
            "call", None, None, callable=index, **call, outcome=outcome, compile_id=compile_id,
            entries=list(dict.fromkeys(own + made)), eager_reason=eager_reason,
            limit=self.limits.get(frame) if missed else None,
            error=type(raised).__name__ if raised is not None else None)

    def _outcome(self, compiled: list[str], own_hit: bool | None, own_entries: bool,
                 frame: str | None, raised) -> tuple[str, str | None]:
        """(outcome, eager_reason) of one call; see the module's docstring."""
        if raised is not None:
            return "error", None
        if compiled and compiled[0] in self.session.codes:
            return ("compile" if _is_first_of_frame(compiled[0]) else "recompile"), None
        if own_hit:
            return "hit", None
        if own_hit is False:
            if frame in self.limits:
                return "eager", "recompile_limit"
            return "eager", "skipped" if compiled else "run_only"
        return "eager", "dynamo_off" if own_entries else "skipped"
