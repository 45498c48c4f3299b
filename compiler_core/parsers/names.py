"""Readable FX names. Dynamo names a parameter or buffer it lifts into a graph input after its
source: `L['fn']._modules['layers']._modules['0']._modules['self_attn']._parameters['in_proj_bias']`
becomes `l_fn_modules_layers_modules_0_modules_self_attn_parameters_in_proj_bias_` (torch
2.11-2.13). Shown as its module path, `layers.0.self_attn.in_proj_bias`; the page keeps the full
name on hover and in copies.
"""

from __future__ import annotations

import re
from functools import lru_cache

# The last few texts' names are kept: a recompile that Inductor's caches answer logs the same
# graphs and code again.
TEXTS_KEPT = 32
# `l_<local>_` then `modules_`/`parameters_`/`buffers_` segments; \b: a whole identifier only.
SOURCE_NAME = re.compile(r"\bl_\w*?_(?:modules|parameters|buffers)_\w+\b")
SEGMENT = re.compile(r"_(?:modules|parameters|buffers)_")
# For searching: a whole identifier, "not after a word character" (searching with no anchor made
# `re` try each "l_" inside a hostile identifier: 14 s on 64 KB of "l_w").
SEARCH_NAME = re.compile(r"(?<!\w)" + SOURCE_NAME.pattern.removeprefix(r"\b"))


def short_name(name: str) -> str | None:
    """`layers.0.self_attn.in_proj_bias` for Dynamo's name of that attribute, else None."""
    if not SOURCE_NAME.fullmatch(name):
        return None
    parts = SEGMENT.split(name.removesuffix("_"))
    return ".".join(parts[1:]) if len(parts) > 1 and all(parts[1:]) else None


def short_names(text: str) -> dict[str, str]:
    """Full name -> short name, for each Dynamo attribute name in `text`."""
    return dict(_short_names(text))


@lru_cache(maxsize=TEXTS_KEPT)
def _short_names(text: str) -> tuple[tuple[str, str], ...]:
    found = {}
    for match in SEARCH_NAME.finditer(text):
        name = match[0]
        if name not in found and (short := short_name(name)) is not None:
            found[name] = short
    return tuple(found.items())


def annotate(stages: dict[str, dict]) -> None:
    """Give each artifact whose text has such names its `names` map (absent when none)."""
    for artifact in stages.values():
        if names := short_names(artifact["text"]):
            artifact["names"] = names


# How a guard's source reaches into a module, as Dynamo writes it (torch 2.11-2.14, source.py:
# `NNModuleSource`, `ParamBufferSource`): `self._modules['lin']._parameters['weight']`.
MODULE_ATTRIBUTES = ("._modules['", "._parameters['", "._buffers['")
AS_TENSOR = "___as_tensor("  # Dynamo's `FloatTensorSource` around a Python float


def _attribute(key: str) -> str:
    """`.lin` for an attribute name, `[0]` for a ModuleList index, `['q-proj']` otherwise."""
    if key.isidentifier():
        return f".{key}"
    return f"[{key}]" if key.isdecimal() else f"['{key}']"


def user_expression(source: str) -> str:
    """A guard's source as the script writes it: `self.lin.weight` for
    `self._modules['lin']._parameters['weight']`, `self.layers[0]` for a ModuleList's entry, the
    float itself for `___as_tensor(lr)`. String search, linear in the source (each prefix is
    searched for again only once the text before its last match is passed)."""
    if source.startswith(AS_TENSOR) and source.endswith(")"):
        source = source[len(AS_TENSOR):-1]
    out, at = [], 0
    next_at = {p: source.find(p) for p in MODULE_ATTRIBUTES}  # each found again only once passed
    while True:
        next_at = {p: i if i >= at or i < 0 else source.find(p, at) for p, i in next_at.items()}
        found = [(i, p) for p, i in next_at.items() if i >= 0]
        if not found:
            return "".join(out) + source[at:]
        start, prefix = min(found)
        key_end = source.find("']", start + len(prefix))
        if key_end < 0:
            return "".join(out) + source[at:]
        out += [source[at:start], _attribute(source[start + len(prefix):key_end])]
        at = key_end + 2
