"""Recompiles, a run-level list, one entry per recompile: the `recompile_reasons` artifact of the
new compile id lists the failed guard of each cache entry the call tried (`0/0: tensor 'x' size
mismatch ...`), newest first; these are the entry's `misses`, and the entry itself states the
first of them (the newest specialization and why it did not serve). In words: the user's line
that recompiled, the line of the guarded value, and the reason in one line, read from PyTorch's
own text (torch 2.11-2.14).

The reason is the first failed check of the cache entry that could not serve the call, in one
of two forms:
- a tensor check (`TensorCheck`, torch/csrc/dynamo/guards.cpp): "tensor 'x' size mismatch at
  index 0. expected 32, actual 16" (also stride, dtype, rank, requires_grad, device index and
  dispatch key set) reads "x.size()[0] changed: 32 -> 16";
- the code of the failed guard with the locals as the script names them, padded to 60 columns,
  then `# source line  # ob/main.py:6 in f` and a "User stack trace:". An equality reads
  "k changed: 1 -> 2", the new value from the call that recompiled (its `call` record: PyTorch
  does not state it), a type or identity check "k's type changed", any other "guard failed:
  <code>".
The guarded value is named as the script writes it: a module's attribute `self.lin.weight` for
Dynamo's `self._modules['lin']._parameters['weight']`, and a resume function's stack slot
(`___stack0`: a value the frame held when it broke) as the user's expression whose value it is,
where PyTorch's data shows it: the slot last in the resume function's prologue holds what the
call that broke returned (its original bytecode), and that call's expression and line are the
broken frame's in the break's user traceback (`y.sum().item()`, line 6). The new value is the
call's argument, else the one the new compile guards by equality; when the new compile guards
the new value so again, Dynamo did not make it dynamic: "recompiles on every new value".
The text is the script's to shape (a tensor's name, a value), so only its first
`REASON_CHARS` are read, by string search: no regex (`PREVIOUS` only splits off the entry id,
anchored and linear).

`detail` keeps the whole reason for a hover, with the user's paths as the script's name: the job
runs it as `/job/main.py`, which torch's `shorten_filename` shows as `ob/main.py`.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from ..compile_ids import beside
from ..parsers.callsite import resume_stack
from ..parsers.common import is_int
from ..parsers.names import user_expression
from .breaks import broken_frame, frame_id, original_name
from .guards import LOCAL, guard_code, with_failed_guards
from .spec import ARTIFACT, Feature, Part, traced

PREVIOUS = re.compile(r"^(?P<previous>\d+/\d+): (?P<reason>.*)$", re.S)
# Not a stage but a run-level list; its records are still announced live, under this name.
PROGRESS = {"recompile_reasons": "recompile"}
REASON_CHARS = 4096  # of a reason read (a guard line with its comments is ~200)
SUMMARY_CHARS = 160  # of the one-line reason
TENSOR = "tensor '"  # a tensor check's reason starts "tensor 'x' "
# Each tensor check's words in the reason, and the expression it checks ({name}, {index}).
TENSOR_CHECKS = {
    "size": "{name}.size()[{index}]", "stride": "{name}.stride()[{index}]",
    "dtype": "{name}.dtype", "rank": "{name}.dim()", "requires_grad": "{name}.requires_grad",
    "Tensor device index": "{name}.device.index", "dispatch key set": "{name}'s dispatch keys",
}
# What may stand beside a path in PyTorch's texts: `File "/job/main.py"`, `# ob/main.py:6`.
NOT_PATH = frozenset(" \t\r\n\"'`()[]{}<>,;:=#")
STACK_SLOT = "___stack"  # a resume function's argument for a value on the broken frame's stack
EVERY_VALUE = "; recompiles on every new value"


def _root(source: str) -> str:
    """The local a source starts from: `x` of `x.size()[0]`, `self` of `self.lin.weight`."""
    end = next((at for at, c in enumerate(source) if not (c.isalnum() or c == "_")), len(source))
    return source[:end]


@dataclass
class Seen:
    """What the run shows of a recompile besides its reason: the recompiling call's arguments by
    name, the values the new compile guards by equality (Dynamo's source -> value), and the
    user's expression and line for Dynamo's sources where known."""
    arguments: dict = field(default_factory=dict)
    pinned: dict = field(default_factory=dict)
    sources: dict = field(default_factory=dict)  # stack slot -> (expression, line)
    held_at: int | None = None  # the line of the break whose stack the slots hold

    def known(self, source: str) -> tuple[str, int | None] | None:
        """The user's expression and line of a source on a stack slot (`___stack0.size()[0]`
        reads as `y.sum().size()[0]`); a slot of unknown origin says where it was held; else
        None."""
        slot = _root(source)
        if slot in self.sources:
            expression, line = self.sources[slot]
            return expression + source[len(slot):], line
        if self.held_at and slot.startswith(STACK_SLOT) and slot[len(STACK_SLOT):].isdecimal():
            return f"{source} (a value held across the graph break at l.{self.held_at})", self.held_at
        return None

    def name(self, source: str) -> str:
        found = self.known(source)
        return found[0] if found else user_expression(source)

    def new_value(self, source: str) -> str | None:
        argument = self.arguments.get(source)
        return argument if isinstance(argument, str) else self.pinned.get(source)


def _bounded(text: str, most: int = SUMMARY_CHARS) -> str:
    """One line (an argument's value may hold line breaks) of at most `most` characters."""
    text = " ".join(text[:most * 2].splitlines())
    return text if len(text) <= most else text[:most - 1] + "…"


def _after(text: str, prefix: str) -> str:
    return text[len(prefix):] if text.startswith(prefix) else text


def _expected(stated: str) -> str:
    """The expected value's first word: PyTorch may go on after it ("expected
    requires_grad=1. Guard failed on a parameter, consider ...")."""
    words = stated.split(maxsplit=1)
    return words[0].rstrip(".,") if words else ""


def _tensor_change(reason: str, seen: Seen) -> str | None:
    """A tensor check's reason in one line ("x.size()[0] changed: 32 -> 16"), else None."""
    if not reason.startswith(TENSOR):
        return None
    found = [(at, check) for check in TENSOR_CHECKS
             if (at := reason.find(f"' {check} mismatch", len(TENSOR))) >= 0]
    if not found:
        return None
    at, check = min(found)
    rest = reason[at + len(f"' {check} mismatch"):]
    index = _after(rest, " at index ").partition(".")[0] if rest.startswith(" at index ") else ""
    stated = rest.partition("xpected ")[2]  # "expected 8, ..." or "Expected device index ..."
    stated = _after(_after(stated, "device index to be "), "requires_grad=")
    expected, _, actual = stated.partition(", actual ")
    expected, actual = _expected(expected), actual.strip()
    if check == "requires_grad" and expected in ("0", "1"):  # PyTorch states the expected one
        expected, actual = ("False", "True") if expected == "0" else ("True", "False")
    name = seen.name(reason[len(TENSOR):at])
    what = TENSOR_CHECKS[check].format(name=name, index=index or "?")
    if not expected:
        return f"{what} changed"
    return f"{what} changed: {expected} -> {actual or '?'}"


def _guard_change(first_line: str, seen: Seen) -> str:
    """The one-line reason for a failed guard's code (its first line, comments and all)."""
    code = guard_code(first_line).strip()
    for check, words in (("___check_type_id(", "'s type changed"),
                         ("___check_obj_id(", " is another object")):
        if code.startswith(check):
            return seen.name(code[len(check):].partition(",")[0].strip()) + words
    left, equals, right = code.partition(" == ")
    if not equals:
        return f"guard failed: {code}" if code else "no reason stated"
    new = seen.new_value(left)
    change = f"{seen.name(left)} changed: {right} -> {new}" if new is not None \
        else f"{seen.name(left)} changed from {right}"
    return change + (EVERY_VALUE if left in seen.pinned else "")


def one_line(reason: str, arguments: dict | None = None, seen: Seen | None = None) -> str:
    """The reason in one line of at most SUMMARY_CHARS. `arguments`: the recompiling call's
    arguments by name, as described in its `call` record; `seen`: all the run shows of it."""
    seen = seen or Seen(arguments=arguments or {})
    first = reason[:REASON_CHARS].strip().partition("\n")[0]
    change = _tensor_change(first, seen) or _guard_change(first, seen)
    if change.endswith(EVERY_VALUE):  # the verdict stays whole
        return _bounded(change[:-len(EVERY_VALUE)], SUMMARY_CHARS - len(EVERY_VALUE)) + EVERY_VALUE
    return _bounded(change)


def _path_start(text: str, name_at: int, floor: int, longest: int) -> int:
    """Where the path that ends in the name at `name_at` starts: after the nearest character
    that is no path's, looking back at most `longest` characters (else -1)."""
    start = name_at
    while start > floor and text[start - 1] not in NOT_PATH:
        start -= 1
        if name_at - start > longest:
            return -1
    return start


def user_paths(text: str, user_file: str) -> str:
    """`text` with each path of the user's script, whole or cut from the left as PyTorch cuts
    it, written as the script's name. Linear: each occurrence of the name looks back at most
    the length of the script's path."""
    name = os.path.basename(user_file)
    if not name:
        return text
    out, done = [], 0
    at = text.find(name)
    while at >= 0:
        end = at + len(name)
        start = _path_start(text, at, done, len(user_file) - len(name))
        ends_path = end == len(text) or text[end] in NOT_PATH
        if start >= 0 and ends_path and user_file.endswith(text[start:end]):
            out += [text[done:start], name]
            done = end
        at = text.find(name, end)
    return "".join(out) + text[done:]


def _call_arguments(calls: list[dict]) -> dict[str, dict]:
    """Compile id -> the arguments of the call (a `call` record) that recompiled into it."""
    return {meta["compile_id"]: meta["arguments"] for record in calls
            if (meta := record["meta"]).get("outcome") == "recompile"
            and isinstance(meta.get("compile_id"), str) and isinstance(meta.get("arguments"), dict)}


def _pinned(compiled: dict | None) -> dict[str, str]:
    """Source -> value, for each value the compile guards by equality (its EQUALS_MATCH
    guards, locals written as the reasons write them)."""
    guards = ((compiled or {}).get("stages", {}).get("guards") or {}).get("guards", [])
    pinned = {}
    for guard in guards:
        left, equals, right = LOCAL.sub(r"\g<name>", guard["code"]).partition(" == ")
        if guard["kind"] == "EQUALS_MATCH" and equals:
            pinned[left.strip()] = guard_code(right).strip()
    return pinned


def _stack_sources(compiled: dict, compiles: dict[str, dict],
                   breaks: list[dict]) -> tuple[dict[str, tuple[str, int]], int | None]:
    """For a resume function: its last stack slot -> the user's expression and line, when the
    slot holds what the call that broke returned (that call's expression in the broken frame),
    and the line of that break, where every stack slot's value was held."""
    name = compiled["frame"]["name"] or ""
    made_by = [b for b in breaks if frame_id(b["resumes_in"]) == frame_id(compiled["id"])]
    if original_name(name) == name or not made_by:
        return {}, None
    brk = made_by[0]
    where = broken_frame(brk, compiles.get(brk["compile_id"], {}).get("frame", {}).get("name"))
    line = where["line"] if where else brk["line"]
    stack = resume_stack((compiled["stages"].get("bytecode_original") or {}).get("text", ""))
    if not (stack and stack[1] and where and where["expression"]):
        return {}, line
    return {f"{STACK_SLOT}{stack[0] - 1}": (where["expression"], line)}, line


def _guarded(reason: str) -> str:
    """The source a failed guard checks: the tensor a tensor check names, else the first
    argument of a check call, else the left side of the comparison."""
    first = guard_code(reason[:REASON_CHARS].strip().partition("\n")[0]).strip()
    if first.startswith(TENSOR):
        return first[len(TENSOR):].partition("' ")[0]
    if first.startswith("___check_"):
        return first.partition("(")[2].partition(",")[0].strip()
    for operator in (" == ", " != ", " is ", " <= ", " >= ", " < ", " > "):
        if operator in first:
            return first.partition(operator)[0].strip()
    return first


def _miss(miss: dict, seen: Seen, guards_of: dict[str, list], user_file: str) -> dict:
    """One cache entry the call missed: its failed guard in one line (`summary`), the reason
    whole (`detail`, the user's paths as its name) and, for a value the call's arguments did not
    give (one computed before a graph break, a module's attribute), the user's line of it
    (`source_line`: where the value came from, else where the failed guard read it)."""
    reason = miss["reason"]
    guarded = _guarded(reason)
    line = (seen.known(guarded) or ("", None))[1]
    guards = guards_of.get(miss["previous"], [])
    failed = [i for i in miss["failed_guards"] if 0 <= i < len(guards)]
    if line is None and failed and _root(guarded) not in seen.arguments:
        line = guards[failed[0]].get("line")
    detail = reason[:REASON_CHARS] + ("…" if len(reason) > REASON_CHARS else "")
    return {**miss, "summary": one_line(reason, seen=seen), "detail": user_paths(detail, user_file),
            "source_line": line if is_int(line) else None}


def annotate(recompiles: list[dict], calls: list[dict], compiles: list[dict], breaks: list[dict],
             user_file: str) -> list[dict]:
    """Each recompile with its `misses` annotated, and the first miss's fields beside `line`
    (the user's line whose call recompiled: its compile's `user_line`)."""
    by_id = {c["id"]: c for c in compiles}
    guards_of = {c["id"]: (c["stages"].get("guards") or {}).get("guards", []) for c in compiles}
    arguments = _call_arguments(calls)
    out = []
    for r in recompiles:
        compiled = by_id.get(r["compile_id"])
        sources, held_at = _stack_sources(compiled, by_id, breaks) if compiled else ({}, None)
        seen = Seen(arguments=arguments.get(r["compile_id"], {}), pinned=_pinned(compiled),
                    sources=sources, held_at=held_at)
        misses = [_miss(m, seen, guards_of, user_file)
                  for m in with_failed_guards(r["misses"], compiles)]
        line = (compiled or {}).get("user_line")
        out.append({"compile_id": r["compile_id"], "line": line if is_int(line) else None,
                    **misses[0], "misses": misses})
    return out


def recompiles(records: list[dict]) -> list[dict]:
    """One entry per recompile (the new compile id of `recompile_reasons` records), with its
    `misses`: each reason listed, the cache entry it names split off as `previous`."""
    grouped: dict[str, list[dict]] = {}
    for record in records:
        payload = record["payload"] or ""
        try:
            reasons = json.loads(payload)
        except ValueError:
            reasons = [payload]
        for reason in reasons if isinstance(reasons, list) else [reasons]:
            match = PREVIOUS.match(str(reason).strip())
            grouped.setdefault(record["compile_id"], []).append(
                {"previous": beside(record["compile_id"], match["previous"]) if match else None,
                 "reason": (match["reason"] if match else str(reason)).strip()})
    return [{"compile_id": cid, "misses": misses} for cid, misses in grouped.items()]


def _recompiles(run) -> list[dict]:
    return annotate(recompiles(run.all("recompile_reasons")), run.all("call"), run.compiles,
                    run.result.get("graph_breaks", []), run.user_file)


FEATURE = Feature("recompiles", records=(traced("recompile_reasons", ARTIFACT),),
                  run_parts=(Part("recompiles", _recompiles, []),))
