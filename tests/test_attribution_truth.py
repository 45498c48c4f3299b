"""What the timings show agrees with what was measured: the stacked kernel bars with their
caption, and a timed call's compiled graphs with the run's compiles.
"""

from __future__ import annotations

from html import escape

import pytest
import torch

from compiler_core.present.plots import OUTSIDE, kernel_figure
from compiler_core.runtime.measure.profile import profile_cpu, top, totals


def chain(x):
    y = torch.sin(x) * 2
    return torch.cos(y) + 1


def test_the_kernel_bars_stack_the_busy_time_their_caption_says():
    """A compiled call's profile holds Dynamo's and AOTAutograd's ranges (`Torch-Compiled
    Region`, its self time is the Python of the frame around the graph: 15-23 us per call of
    the print graph break example, against 0.2 us of kernels, in this and in a plain process's
    key_averages). The bar is the kernels' and ops' time the caption calls busy, and the rest of
    the profiled call as one segment named so; never a range stacked as if it were a kernel."""
    import torch._inductor.config as inductor_config
    x = torch.randn(8, 16)
    with inductor_config.patch({"cpp.enable_kernel_profile": True}):
        compiled = torch.compile(chain)
        compiled(x)
    profiles = {"eager": profile_cpu(lambda: chain(x), 10, rounds=1),
                "compiled": profile_cpu(lambda: compiled(x), 10, rounds=1)}
    kernels = {"cache": "warm (CPU)", "totals": {}}
    for side, profile in profiles.items():
        kernels["totals"][side] = totals(profile, None)
        kernels["totals"][side].pop("withheld", None)  # the arithmetic, however busy the machine
        kernels[side] = top(profile["rows"])
    ranges = {escape(r["name"], quote=False) for r in profiles["compiled"]["rows"]
              if r["kind"] == "framework"}
    assert any(name.startswith("Torch-Compiled Region") for name in ranges)
    figure = kernel_figure(kernels, "cpu")
    title = figure["layout"]["title"]["text"]
    for side in ("eager", "compiled"):
        side_totals = kernels["totals"][side]
        segments = {t["name"]: t["y"][0] for t in figure["data"] if t["legendgroup"] == side}
        assert not ranges & set(segments), segments
        work = sum(us for name, us in segments.items() if name != OUTSIDE)
        assert work == pytest.approx(side_totals["us_per_call"], rel=1e-9)
        assert f"{side} {side_totals['us_per_call']:.1f} us busy" in title
        assert sum(segments.values()) == pytest.approx(side_totals["wall_us_per_call"], rel=1e-9)
    # the per-kernel table lists the kernels first, then the ranges
    kinds = [r["kind"] for r in kernels["compiled"]]
    assert kinds[0] == "cpp" and kinds.index("framework") > kinds.index("cpp")
    assert "framework" not in kinds[:kinds.count("cpp")]


def test_a_graph_the_timing_compiled_itself_is_named_so(kept_runs):
    """Compiled autograd traces the backward again once the gradients the earlier calls left
    accumulate (a plain process: `counters["compiled_autograd"]["captures"]` 1 after a call with
    the .grad None, 2 after the next), so the timed calls of the gallery example run a graph
    compiled while capture was paused: the entry names it, and says it is not among the
    compiles, nor joined to provenance."""
    from compiler_core.gallery import get_example
    result, quiet = kept_runs(get_example("compiled_autograd").source, "compiled_autograd.py")
    for built in (result, quiet):
        (timing,) = built["timings"]
        known = {c["id"] for c in built["compiles"]}
        unknown = [i for i in timing["replayed"] if i not in known]
        assert unknown, (timing["replayed"], known)
        assert timing["compiled_while_timing"] == unknown
        (note,) = [n for n in timing["notes"] if unknown[0] in n]
        assert "not among this run's compiles" in note and "while timing" in note
    attribution = quiet["timings"][0]["attribution"]
    assert attribution["compiled_while_timing"] == unknown
    rows = {r["kernel"]: r for r in attribution["rows"]}
    assert all(r["kind"] in ("compiled only", "both sides", "outside", "eager only")
               or r["source"][0]["compile"] in known for r in rows.values())


def test_a_timing_of_the_scripts_own_graphs_names_none():
    from compiler_core.features.timings import compiled_while_timing
    compiles = [{"id": "0/0"}, {"id": "1/0"}]
    assert compiled_while_timing({"replayed": ["0/0", "1/0"]}, compiles) == []
    assert compiled_while_timing({"replayed": ["0/0", "!1/3/0"]}, compiles) == ["!1/3/0"]
    assert compiled_while_timing({"error": "not timed"}, compiles) == []


def test_bytes_moved_are_given_where_known_and_said_unknown_elsewhere(kept_runs):
    from test_attribution import SCRIPT
    from compiler_core.features.timings.summary import add_bytes
    _, quiet = kept_runs(SCRIPT, "attributed.py")
    attribution = quiet["timings"][0]["attribution"]
    assert attribution["bytes"].startswith("Bytes moved: not known on a CPU")
    assert not any("compiled_gb" in row for row in attribution["rows"])
    # GPU: a compiled kernel's row takes its per-kernel row's bytes (Inductor's num_gb)
    rows = [{"kernel": "triton_poi_fused_add_0"}, {"kernel": "aten::mm"}]
    add_bytes(rows, [{"name": "triton_poi_fused_add_0", "gb_per_call": 2e-6},
                     {"name": "aten::mm", "kind": "library"}])
    assert rows == [{"kernel": "triton_poi_fused_add_0", "compiled_gb": 2e-6}, {"kernel": "aten::mm"}]


SAME_KERNEL_TWICE = """import torch


def f(x):
    y = x.sin() + 1
    print("a graph break")
    return y.sin() + 1


torch.compile(f)(torch.randn(8, 16))
"""


def test_kernels_of_one_name_in_two_graphs_are_rows_of_their_own(kept_runs):
    """Both graphs of the break make a `cpp_fused_add_sin_0`; the profiler names each by its
    graph (`graph_N_...`, the range Inductor's kernel profiling opens, quoted in its source), so
    each is a row with its own compile, eager ops and time."""
    _, quiet = kept_runs(SAME_KERNEL_TWICE, "same_kernel_twice.py")
    (timing,) = quiet["timings"]
    names = {k["name"] for c in quiet["compiles"] for k in c["kernels"] if k["kind"] == "cpp"}
    assert len(names) == 1 and len(quiet["compiles"]) == 2, names  # one name, two graphs
    rows = [r for r in timing["attribution"]["rows"] if r["kernel"] in names]
    assert len(rows) == 2, rows
    assert sorted(r["source"][0]["compile"] for r in rows) == ["0/0", "1/0"]
    for row in rows:
        assert len(row["source"]) == 1 and row["compiled_us"] > 0
        assert sorted(op["op"] for op in row["eager_ops"]) == ["aten::add", "aten::sin"]
        assert {op["matched"] for op in row["eager_ops"]} == {"order"}
