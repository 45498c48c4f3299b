"""What the attribution's rows say (`attribution.py`): why a kernel lost to the eager ops it
replaced, the waterfall from eager's call to compiled's with its headline, and bytes moved.
"""

from __future__ import annotations

GENERATED = ("triton", "cpp")
SLOWER_BY_US = 1.0  # a kernel is marked slower past this and 5 % of its eager ops' time
SLOWER_BY_SHARE = 0.05


def slower_reason(row: dict) -> str | None:
    """Why a kernel took longer than the eager ops it replaced, from what was measured."""
    saved = row["eager_us"] - row["compiled_us"]
    if row["kind"] in ("outside", "compiled only", "eager only") or (
            -saved <= max(SLOWER_BY_US, SLOWER_BY_SHARE * row["eager_us"])):
        return None
    ops = sorted({op["op"] for op in row["eager_ops"]})
    said = [f"took {row['compiled_us']:.1f} µs per call against {row['eager_us']:.1f} µs for the "
            f"eager op{'s' if len(ops) != 1 else ''} it replaced ({', '.join(ops) or 'none'})"]
    if row.get("recomputed"):
        said.append(f"it recomputes {', '.join(sorted(set(row['recomputed'])))}, which another "
                    "kernel computes too")
    if row["kernel"].startswith("triton_tem_"):
        said.append("a Triton template chosen by autotuning lost to eager's library call here")
    elif row["kind"] in ("extern", "fallback"):
        said.append("the same library op as eager's: the difference is its arguments' layout "
                    "or its cache conditions in the compiled call")
    if any(op.get("matched") in ("name", "backward name") for op in row["eager_ops"]):
        said.append("its eager time is an even split of an op's calls by name (eager called it "
                    "a number of times the graphs don't hold, or a backward op)")
    if not row["eager_ops"]:
        said.append("no eager op was matched to it")
    return "; ".join(said)


def waterfall(rows: list[dict], eager_e2e: float, compiled_e2e: float) -> list[dict]:
    """From eager's call to compiled's: what each kind of row saved (negative: cost)."""
    def saved(pick) -> float:
        return sum(r["saved_us"] for r in rows if pick(r))

    def fused(r):
        return r["kind"] in GENERATED and len({o["node"] for o in r["eager_ops"]}) > 1
    steps = [("fusion (kernels holding several eager ops)", saved(fused)),
             ("one-op kernels", saved(lambda r: r["kind"] in GENERATED and not fused(r))),
             ("library calls", saved(lambda r: r["kind"] in ("extern", "fallback"))),
             ("CUDA graph replays", saved(lambda r: r["kind"] == "cudagraph")),
             ("eager work removed", saved(lambda r: r["kind"] == "eager only")),
             ("other compiled work", saved(lambda r: r["kind"] in ("compiled only",
                                                                   "both sides"))),
             ("outside kernels (launch, framework, Python)",
              saved(lambda r: r["kind"] == "outside"))]
    return ([{"label": "eager call", "us": eager_e2e, "total": True}]
            + [{"label": label, "saved_us": us} for label, us in steps if abs(us) >= 0.05]
            + [{"label": "compiled call", "us": compiled_e2e, "total": True}])


def _us(us: float) -> str:
    return f"{us / 1e3:.3g} ms" if abs(us) >= 1e3 else f"{us:.3g} µs"


def headline(steps: list[dict], eager_kernels: float, compiled_kernels: float) -> str:
    parts = [f"{s['label'].split(' (')[0]} {'saved' if s['saved_us'] >= 0 else 'cost'} "
             f"{_us(abs(s['saved_us']))}" for s in steps if "saved_us" in s]
    return f"kernels {_us(eager_kernels)} -> {_us(compiled_kernels)}: " + ", ".join(parts)


BYTES = {"cuda": "Bytes moved: the compiled Triton kernels' as their per-kernel rows have them "
                 "(Inductor's kernel_num_gb, else counted from the launch's arguments); not known "
                 "for eager's kernels or library calls (the profiler records no bytes).",
         "cpu": "Bytes moved: not known on a CPU (the profiler records no bytes, and Inductor "
                "estimates them for GPU kernels only)."}


def add_bytes(rows: list[dict], compiled_rows: list[dict]) -> None:
    """A row's compiled bytes per call where its kernel's per-kernel row has them (GPU)."""
    moved = {r["name"]: r["gb_per_call"] for r in compiled_rows if r.get("gb_per_call")}
    for row in rows:
        if row["kernel"] in moved:
            row["compiled_gb"] = moved[row["kernel"]]
