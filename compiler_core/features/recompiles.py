"""Recompiles, a run-level list: each is the `recompile_reasons` artifact of the new compile id,
naming the cache entry whose guard failed (`0/0: tensor 'x' size mismatch ...`). In words: the
user's line that recompiled and its reason in one line, read from PyTorch's own text (torch
2.11-2.14).

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

from ..parsers.common import is_int
from .guards import guard_code, with_failed_guards
from .spec import Feature, Part, record

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


def _bounded(text: str) -> str:
    """One line (an argument's value may hold line breaks) of at most SUMMARY_CHARS."""
    text = " ".join(text[:SUMMARY_CHARS * 2].splitlines())
    return text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS - 1] + "…"


def _after(text: str, prefix: str) -> str:
    return text[len(prefix):] if text.startswith(prefix) else text


def _tensor_change(reason: str) -> str | None:
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
    if check == "requires_grad" and expected in ("0", "1"):  # PyTorch states the expected one
        expected, actual = ("False", "True") if expected == "0" else ("True", "False")
    what = TENSOR_CHECKS[check].format(name=reason[len(TENSOR):at], index=index or "?")
    if not expected.strip():
        return f"{what} changed"
    return f"{what} changed: {expected.strip()} -> {actual.strip() or '?'}"


def _guard_change(first_line: str, arguments: dict) -> str:
    """The one-line reason for a failed guard's code (its first line, comments and all)."""
    code = guard_code(first_line).strip()
    for check, words in (("___check_type_id(", "'s type changed"),
                         ("___check_obj_id(", " is another object")):
        if code.startswith(check):
            return code[len(check):].partition(",")[0].strip() + words
    left, equals, right = code.partition(" == ")
    if equals and isinstance(arguments.get(left), str):
        return f"{left} changed: {right} -> {arguments[left]}"
    if equals:
        return f"{left} changed from {right}"
    return f"guard failed: {code}" if code else "no reason stated"


def one_line(reason: str, arguments: dict | None = None) -> str:
    """The reason in one line of at most SUMMARY_CHARS. `arguments`: the recompiling call's
    arguments by name, as described in its `call` record."""
    first = reason[:REASON_CHARS].strip().partition("\n")[0]
    change = _tensor_change(first) or _guard_change(first, arguments or {})
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


def annotate(recompiles: list[dict], calls: list[dict], compiles: list[dict],
             user_file: str) -> list[dict]:
    """Each recompile with `line` (the user's line whose call recompiled: its compile's
    `user_line`), `summary` (one line) and `detail` (the reason, the user's paths as its name)."""
    lines = {c["id"]: c["user_line"] for c in compiles}
    arguments = _call_arguments(calls)
    out = []
    for r in recompiles:
        line = lines.get(r["compile_id"])
        detail = r["reason"][:REASON_CHARS] + ("…" if len(r["reason"]) > REASON_CHARS else "")
        out.append({**r, "line": line if is_int(line) else None,
                    "summary": one_line(r["reason"], arguments.get(r["compile_id"])),
                    "detail": user_paths(detail, user_file)})
    return out


def recompiles(records: list[dict]) -> list[dict]:
    """One entry per reason of each `recompile_reasons` record given."""
    out = []
    for record in records:
        payload = record["payload"] or ""
        try:
            reasons = json.loads(payload)
        except ValueError:
            reasons = [payload]
        for reason in reasons if isinstance(reasons, list) else [reasons]:
            match = PREVIOUS.match(str(reason).strip())
            out.append({"compile_id": record["compile_id"],
                        "previous": match["previous"] if match else None,
                        "reason": (match["reason"] if match else str(reason)).strip()})
    return out


def _recompiles(run) -> list[dict]:
    listed = with_failed_guards(recompiles(run.all("recompile_reasons")), run.compiles)
    return annotate(listed, run.all("call"), run.compiles, run.user_file)


FEATURE = Feature("recompiles", records=(record("recompile_reasons"),),
                  run_parts=(Part("recompiles", _recompiles, []),))
