"""Replaying a recorded call: the arguments the script really passed, in its grad mode, with a
backward only where the script ran one.

Timing calls the compiled callable again on copies of the recorded arguments (`snapshot`: same
values and layout), so it runs the cache entry the script's call ran, whatever branch its values
take. The first call is a probe under `torch.compiler.set_stance("fail_on_recompile")`: timing
never compiles. A callable that changes its inputs in place gets them restored from the
recording before each timed sample (outside the timed span).
"""

from __future__ import annotations

import re

import torch
from torch.utils._pytree import tree_map

from ..callables import RecordedCall, snapshot
from .inputs import GRAD_MODES, tensors

# "- 4/0: G['scale'] == 2.0      # return x * scale  # main.py:29 in scaled": the guard's code
GUARD_FAILURE = re.compile(r"guard failure\(s\):\s*-\s*(?:\d+/\d+:\s*)?(?P<first>[^\n#]+)")


class Replay:
    def __init__(self, call: RecordedCall) -> None:
        self.recorded = call
        self.grad_mode = call.grad_mode
        self.backward = call.backward  # the script ran backward through such a call's outputs
        self.args = tree_map(snapshot, call.args)
        self.kwargs = tree_map(snapshot, call.kwargs)
        self.mutates = False

    def grad_context(self):
        return GRAD_MODES[self.grad_mode]()

    def _versions(self) -> list[int]:
        return [t._version for t in tensors((self.args, self.kwargs))]

    def probe(self, compiled) -> None:
        """One call of the compiled callable as recorded; raises when it would compile again."""
        before = self._versions()
        with self.grad_context(), torch.compiler.set_stance("fail_on_recompile"):
            compiled(*self.args, **self.kwargs)
        self.mutates = self._versions() != before
        self.restore()

    def restore(self) -> None:
        """The arguments' values as recorded (a no-op unless the callable mutates them)."""
        if not self.mutates:
            return
        with torch.no_grad():
            for live, saved in zip(tensors((self.args, self.kwargs)),
                                   tensors((self.recorded.args, self.recorded.kwargs))):
                live.copy_(saved)

    def fresh_copies(self) -> tuple[tuple, dict]:
        """Another copy of the recorded arguments, for a call whose effects must not stay."""
        return tree_map(snapshot, self.recorded.args), tree_map(snapshot, self.recorded.kwargs)


def untimed_reason(exc: BaseException) -> str:
    """One plain line saying why a call was not timed."""
    text = str(exc)
    if "fail_on_recompile" in text:
        failure = GUARD_FAILURE.search(text)
        guard = f" (guard failed: {failure['first'].strip()})" if failure else ""
        return ("not timed: calling it again with the arguments the script passed would "
                f"compile again{guard}")
    first = text.strip().splitlines()[0] if text.strip() else ""
    return f"not timed: {type(exc).__name__}: {first}"[:300]
