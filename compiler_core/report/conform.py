"""Hold a result to its schema: a part a job's records made malformed is dropped, and said so.

Records come from the job, and many of their fields pass into the result as the job wrote them
(metadata of calls, timings, exports, node tables). `conform` validates the result against
`result.schema.json` and removes what fails: an item of a list, else the field (a required
top-level field gets its empty value), repeating until the result is valid; each removal is
listed in `stage_errors` (stage "schema"), so the page, the API and the stores only ever see a
result of the documented shape.

The stage names the schema allows are the feature registry's, filled in here where it is loaded
(`result.schema.json` lists none): a stage a feature declares is never dropped as unknown.

Stage texts, their line maps, the guards list, kernels' line maps and the saved activations are
validated in a cut-down copy (their first `SAMPLE` items): the extractors build them from text,
and validating every item of a 21 MB result took ~3 s (jsonschema, 130 ms per MB on this
machine), against ~40 ms for its skeleton. Every item of the kernels lists is checked (each
kernel's line maps cut): the page renders and links each one, they are short (one item per
kernel: 25 per compile of the 85.7 MB benchmark log), and sampling them too saved nothing
measurable there (0.39 s of checking either way, issue 46).
"""

from __future__ import annotations

import json
import os

import jsonschema

from ..features import STAGES
from ..features.spec import step_error

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "result.schema.json")
# Where each owner of stages holds them (`Stage.field`): a compile's, a program's.
STAGE_OWNERS = {"compile": ("stages",), "program": ("exports", "torchscript")}


def load_schema() -> dict:
    """The result schema, its stage names from the feature registry."""
    with open(SCHEMA_PATH, encoding="utf-8") as fh:
        schema = json.load(fh)
    for owner, fields in STAGE_OWNERS.items():
        names = [stage.name for stage in STAGES if stage.field in fields]
        schema["$defs"][owner]["properties"]["stages"]["propertyNames"]["enum"] = names
    return schema


SCHEMA = load_schema()
VALIDATOR = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)
SAMPLE = 64
ROUNDS = 8
EMPTY = {"environment": {}, "options": {}, "user_file": "", "stdout": "", "stderr": "",
         "error": None, "finished": False, "duration_s": None, "version": 3}


def _cut(artifact):
    if not isinstance(artifact, dict):
        return artifact
    cut = dict(artifact)
    for key in ("text", "src_lines", "kernel_src", "guards"):  # guards: parsed from the text
        if isinstance(cut.get(key), (str, list)):
            cut[key] = cut[key][:SAMPLE]
    return cut


def _first_items(value):
    if not isinstance(value, dict):
        return value
    return {k: v[:SAMPLE] if isinstance(v, list) else v for k, v in value.items()}


def _skeleton(result: dict) -> dict:
    """The result with each stage's text and line maps, kernels' line maps and the saved
    activations cut to their first items."""
    def owner(entry):
        if not isinstance(entry, dict):
            return entry
        cut = {**entry}
        if isinstance(entry.get("stages"), dict):
            cut["stages"] = {k: _cut(v) for k, v in entry["stages"].items()}
        if isinstance(entry.get("kernels"), list):
            cut["kernels"] = [_cut(kernel) for kernel in entry["kernels"]]
        if "saved_activations" in entry:
            cut["saved_activations"] = _first_items(entry["saved_activations"])
        return cut
    return {**result, **{key: [owner(e) for e in result[key]] for key in
                         ("compiles", "exports", "torchscript")
                         if isinstance(result.get(key), list)}}


def _remove(result: dict, path: list) -> None:
    if len(path) == 1:
        key = path[0]
        result[key] = [] if isinstance(SCHEMA["properties"].get(key, {}).get("items"), dict) \
            else EMPTY.get(key)
        return
    parent = result
    for step in path[:-1]:
        parent = parent[step]
    if isinstance(parent, list):
        parent[path[-1]] = _DROPPED
    else:
        parent.pop(path[-1], None)


_DROPPED = object()


def _sweep(value):
    """Remove the list items marked as dropped (in place), everywhere."""
    if isinstance(value, list):
        value[:] = [_sweep(v) for v in value if v is not _DROPPED]
    elif isinstance(value, dict):
        for v in value.values():
            _sweep(v)
    return value


def conform(result: dict) -> dict:
    """The result, with every part that breaks the schema removed (in place, and returned)."""
    for _ in range(ROUNDS):
        errors = list(VALIDATOR.iter_errors(_skeleton(result)))
        if not errors:
            return result
        # The error's path; for a missing required field, the object that lacks it.
        paths = sorted({tuple(e.absolute_path) for e in errors}, key=len)
        notes = [step_error(None, "schema", (
            f"dropped {'/'.join(map(str, e.absolute_path)) or 'the result'}: "
            f"{e.message[:300]}")) for e in errors[:50]]
        for path in paths:
            if not path:
                raise ValueError("the result is not an object")
            if any(path[:n] in paths for n in range(1, len(path))):
                continue  # an enclosing part goes anyway
            _remove(result, list(path))
        _sweep(result)
        result.setdefault("stage_errors", [])
        if isinstance(result["stage_errors"], list):
            result["stage_errors"] += notes
    raise ValueError(f"the result still breaks its schema after {ROUNDS} rounds")
