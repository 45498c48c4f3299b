"""Readable FX names. Dynamo names a parameter or buffer it lifts into a graph input after its
source: `L['fn']._modules['layers']._modules['0']._modules['self_attn']._parameters['in_proj_bias']`
becomes `l_fn_modules_layers_modules_0_modules_self_attn_parameters_in_proj_bias_` (torch
2.11-2.13). Shown as its module path, `layers.0.self_attn.in_proj_bias`; the page keeps the full
name on hover and in copies.
"""

from __future__ import annotations

import re

# `l_<local>_` then `modules_`/`parameters_`/`buffers_` segments; \b: a whole identifier only.
SOURCE_NAME = re.compile(r"\bl_\w*?_(?:modules|parameters|buffers)_\w+\b")
SEGMENT = re.compile(r"_(?:modules|parameters|buffers)_")


def short_name(name: str) -> str | None:
    """`layers.0.self_attn.in_proj_bias` for Dynamo's name of that attribute, else None."""
    if not SOURCE_NAME.fullmatch(name):
        return None
    parts = SEGMENT.split(name.removesuffix("_"))
    return ".".join(parts[1:]) if len(parts) > 1 and all(parts[1:]) else None


def short_names(text: str) -> dict[str, str]:
    """Full name -> short name, for each Dynamo attribute name in `text`."""
    found = {}
    for name in set(SOURCE_NAME.findall(text)):
        if (short := short_name(name)) is not None:
            found[name] = short
    return found


def annotate(stages: dict[str, dict]) -> None:
    """Give each artifact whose text has such names its `names` map (absent when none)."""
    for artifact in stages.values():
        if names := short_names(artifact["text"]):
            artifact["names"] = names
