"""Plotly figures (plain JSON: `{"data": [...], "layout": {...}}`) for the timing views.

Built where the numbers are measured, so that the result carries them and the page only calls
`Plotly.newPlot(el, fig.data, fig.layout)`; no plotly package is needed on the server. Kernel
names are escaped where they enter plotly's labels, which are text with a few HTML tags.
"""

from __future__ import annotations

from html import escape

SHOWN = 12  # kernels per bar; the rest are summed as "other"
# A CPU bar's last segment: the profiled call's time outside its kernels and ops (the Python,
# Dynamo's and AOTAutograd's ranges, the profiler's own cost), one segment on both sides.
OUTSIDE = "outside the kernels and ops (Python, framework, profiler)"


def _segments(rows: list[dict], totals: dict) -> list[tuple[str, float]]:
    """The busy rows (kernels and ops: the caption's busy time), and on a CPU the rest of the
    profiled call: a framework range is no kernel, and eager's Python has no range to show."""
    busy = [r for r in rows if r.get("kind") != "framework"]
    top = [(escape(r["name"], quote=False), r["us_per_call"]) for r in busy[:SHOWN]]
    rest = sum(r["us_per_call"] for r in busy[SHOWN:])
    wall = totals.get("wall_us_per_call")
    outside = wall - totals["us_per_call"] if wall else 0.0
    return (top + ([("other", rest)] if rest else [])
            + ([(OUTSIDE, outside)] if outside > 0 else []))


def kernel_figure(kernels: dict, device_kind: str) -> dict | None:
    """Eager and compiled, one stacked bar each: every kernel's and op's time per call (the busy
    time of the caption), and on a CPU the rest of the profiled call. None where a side's times
    were withheld (`profile.withheld_reason`): half a comparison would mislead."""
    if any(kernels["totals"][mode].get("withheld") for mode in ("eager", "compiled")):
        return None
    unit = ("GPU device time per profiled call by kernel" if device_kind == "cuda" else
            "CPU self time per profiled call by kernel and op, then the rest of the call")
    data = []
    for mode in ("eager", "compiled"):
        for name, us in _segments(kernels[mode], kernels["totals"][mode]):
            data.append({"type": "bar", "x": [mode], "y": [us], "name": name,
                         "legendgroup": mode,
                         "hovertemplate": f"{name}<br>%{{y:.1f}} us per call<extra>{mode}</extra>"})
    return {"data": data, "layout": {
        "barmode": "stack", "showlegend": False,
        "title": {"text": f"{unit} ({kernels['cache']}): "
                          f"{_total('eager', kernels['totals']['eager'])}, "
                          f"{_total('compiled', kernels['totals']['compiled'])}"},
        "yaxis": {"title": {"text": "microseconds per call"}}}}


def _total(mode: str, totals: dict) -> str:
    """`eager 28.8 us busy of a 56.3 us profiled call` (CPU), `eager 28.8 us busy` (GPU)."""
    wall = totals.get("wall_us_per_call")
    return f"{mode} {totals['us_per_call']:.1f} us busy" + (
        f" of a {wall:.1f} us profiled call" if wall else "")


def roofline_figure(rows: list[dict], peaks: dict | None) -> dict | None:
    """Compiled kernels at (FLOP per byte, TFLOP/s) under the bandwidth and bf16 roofs."""
    points = [r for r in rows if r.get("gb_per_call") and r.get("flop_per_call")]
    if not peaks or not points:
        return None
    intensity = [r["flop_per_call"] / (r["gb_per_call"] * 1e9) for r in points]
    low = min(intensity + [0.1]) / 4
    high = max(intensity + [4 * peaks["bf16_tflops"] / (peaks["bandwidth_gbps"] / 1e3)])
    xs = [low * (high / low) ** (i / 63) for i in range(64)]
    roof = [min(peaks["bf16_tflops"], x * peaks["bandwidth_gbps"] / 1e3) for x in xs]
    return {"data": [
        {"type": "scatter", "mode": "lines", "x": xs, "y": roof, "name": "roof",
         "hovertemplate": "%{x:.2f} FLOP/B: %{y:.1f} TFLOP/s<extra>roof</extra>"},
        {"type": "scatter", "mode": "markers+text", "x": intensity,
         "y": [r["tflops"] for r in points],
         "text": [escape(r["name"], quote=False) for r in points],
         "textposition": "top center", "name": "compiled kernels",
         "hovertemplate": "%{text}<br>%{x:.2f} FLOP/B, %{y:.2f} TFLOP/s<extra></extra>"}],
        "layout": {"title": {"text": "Roofline of the compiled kernels (bandwidth and bf16 "
                                     "peaks measured on this device)"},
                   "xaxis": {"type": "log", "title": {"text": "FLOP per byte moved"}},
                   "yaxis": {"type": "log", "title": {"text": "TFLOP/s"}}}}
