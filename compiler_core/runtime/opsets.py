"""How many operators each IR level offers in the installed torch, beside each compile's op
census: the ATen operators (operator packets such as `aten::add`, overloads folded), the Core
ATen ones (packets with an overload tagged `torch.Tag.core`, the set backends must implement)
and the prims (packets in the `prims` namespace). Read once per process (about 0.15 s), in the
warm-up before any job."""

from __future__ import annotations

import functools

import torch

HOW = ("operator packets registered with the dispatcher (overloads folded); core_aten: "
       "packets with an overload tagged torch.Tag.core")


def _packets(names: list[str], namespace: str) -> set[str]:
    prefix = f"{namespace}::"
    return {n.removeprefix(prefix).split(".")[0] for n in names if n.startswith(prefix)}


def _is_core(packet: str) -> bool:
    try:
        ops = getattr(torch.ops.aten, packet)
        return any(torch.Tag.core in getattr(ops, name).tags for name in ops.overloads())
    except (AttributeError, RuntimeError):  # a name without a Python binding
        return False


@functools.cache
def opsets() -> dict:
    names = torch._C._dispatch_get_all_op_names()
    aten = _packets(names, "aten")
    return {"aten": len(aten), "core_aten": sum(map(_is_core, aten)),
            "prims": len(_packets(names, "prims")), "how": HOW}
