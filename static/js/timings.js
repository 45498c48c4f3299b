// Timings view: what the engine measured after the script ran (compiler_core/runtime/measure), one card
// per compiled callable and call signature: the engine's speed verdict (or why it can't tell) and
// the compiled graphs the timed call ran, the correctness verdict, eager vs compiled end to end
// (median, IQR and the median of per-turn ratios with their range, per series), launches per
// call, the per-kernel rows (or why their times are withheld), and the engine's plotly figures.
// User text (callable and kernel names) only reaches the page through dom.js; the figures'
// labels were escaped where they were built (plots.py).

import { h, clear, labelled } from "./dom.js";
import { loadPlotly } from "./plotly.js";
import { renderAttribution } from "./attribution.js";
import { graphsRun } from "./calls.js";
import { hostBound, longSpanNote } from "./hostbound.js";
import { failedStep } from "./stages.js";

const RATES = [ // optional kernel columns (GPU): [row key, header, format]
  ["us_alone", "alone, per launch (as do_bench)", (v) => duration(v / 1e3)],
  ["gbps", "GB/s", (v) => v.toFixed(0)],
  ["pct_peak_bandwidth", "% peak BW", (v) => `${v.toFixed(0)}%`],
  ["tflops", "TFLOP/s", (v) => v.toFixed(1)],
  ["pct_peak_bf16", "% peak bf16", (v) => `${v.toFixed(0)}%`],
];

// Three significant figures (two decimals below 10), in µs below a millisecond.
function duration(ms) {
  const [value, unit] = ms < 1 ? [ms * 1e3, "µs"] : [ms, "ms"];
  return `${value.toFixed(value >= 100 ? 0 : value >= 10 ? 1 : 2)} ${unit}`;
}

const magnitude = (v) => (v && v < 1e-3 ? v.toExponential(1) : String(+v.toPrecision(2)));

// The engine's verdict on a series; derived from the ratios' quartiles for results stored before
// the engine judged (they carry no contention figure).
function outcomeOf(series) {
  if (series.verdict) return series.verdict;
  const { low, high } = series.speedup;
  return { outcome: low > 1 ? "faster" : high < 1 ? "slower" : "within_noise" };
}

const OUTCOME_WORDS = { faster: "faster", slower: "slower", within_noise: "within noise",
                        busy: "can't tell (machine busy)", too_few: "can't tell (too few turns)" };

function speedupText(series) {
  const { median, low, high } = series.speedup;
  return `${median.toFixed(2)}× (${low.toFixed(2)}–${high.toFixed(2)}×), ${OUTCOME_WORDS[outcomeOf(series).outcome]}`;
}

// A word with its meaning on hover.
const term = (word, meaning) => h("abbr", { class: "term", title: meaning }, word);
const TERMS = {
  iqr: "interquartile range: the middle half of the samples lay between these two times",
  busy: "how long the kernels (on a CPU, the operators) ran in one call, from the profiler; " +
    "the rest of the call is Python, dispatch and launch overhead. On a CPU, of a profiled call: " +
    "the profiler's own cost makes it slower than the call timed without it",
  hostBound: "host-bound: launching the work takes the host CPU as long as the device takes to run it " +
    "(or longer), so these times follow the host's speed, which drifts",
  speedup: "eager's time over compiled's, per pair of neighbouring eager and compiled turns: the " +
    "median of those ratios, and in brackets the range of the middle half of them. It is not the " +
    "ratio of the two medians beside it, which can differ",
};

// Why a speed-up within the noise can't be told on this machine, from what the timing recorded.
function noiseReasons(entry, series) {
  const { low, high } = series.speedup;
  const busy = entry.kernels?.totals?.compiled?.busy_share;
  const waited = series.contention?.wait_share;
  return [
    hostBound(series) ? "The host CPU paces these calls (it launches the work no faster than the device " +
      "runs it), and its speed drifts." : null,
    entry.device === "cuda" && busy != null && busy < 0.5 ? `The GPU was busy for only ${(100 * busy).toFixed(0)} % ` +
      "of the compiled call: launch overhead decides its time, not the kernels." : null,
    waited != null && waited >= 0.01 ? `Other work on the machine: the job's threads waited ` +
      `${waited.toPrecision(2)} s for a CPU per second timed.` : null,
    high / low > 1.5 ? "The ratios spread widely: other work on the machine slowed some turns." : null,
  ].filter(Boolean);
}

// The compiled graphs the timed call ran, named where the callable has several (a call with a
// graph break runs several; a callable compiled again, e.g. for a dynamic size, runs one of them),
// and the script's own call with the same arguments where it ran another: Dynamo tries its newest
// graph first, so a replay after a recompile can run the later, dynamic-size graph.
function replayedText(entry, result) {
  const ran = entry.replayed ?? [];
  const all = result.compiled_callables?.[entry.callable]?.compile_ids ?? ran;
  if (!ran.length || all.length < 2) return "";
  const graphs = ran.length > 1 ? `compiled graphs ${ran.join(", ")}` : `compiled graph ${ran[0]}`;
  const script = graphsRun(result, entry.callable, entry.arguments);
  const other = script.length && !script.includes(ran[0])
    ? ` The script's own call with these arguments ran ${script.join(", ")}.` : "";
  return ` The timed call ran ${graphs} of this callable's ${all.length} (${all.join(", ")}).${other}`;
}

// The room's answer first: a headline (faster, slower or can't tell, by how much: the engine's
// verdict and median ratio), then the sentence that says what was timed (the script's call, with
// a backward only where the script ran one), how the figure was found and why it can't tell.
function speedVerdict(entry, result) {
  const series = entry.e2e?.warm; // the series to compare first (endToEnd's first row)
  const s = series?.speedup;
  // `timed` is absent from results stored before it existed
  const timed = entry.timed ?? (entry.mode === "forward+backward" ? "Forward and backward" : "One call");
  const graphs = replayedText(entry, result);
  const said = (cls, headline, ...detail) => h("div", { class: `speed-verdict ${cls}` },
    h("p", { class: "speed-headline" }, headline), h("p", { class: "speed-detail" }, `${timed}: `, ...detail));
  if (!s) return said("unclear", "No speed verdict: the outputs differ", `compiled's output differs from eager's.${graphs}`);
  const times = (x) => `${x.toFixed(x >= 10 ? 0 : 1)}×`;
  const ratios = `the median of ${s.pairs} paired turns' ratios`;
  const { outcome, reason } = outcomeOf(series);
  if (outcome === "faster") {
    return said("faster", `Compiled is about ${times(s.median)} faster`, `compiled is about ${times(s.median)} faster ` +
      `than eager on this machine (${ratios}; the middle half of them all say faster).${graphs}`);
  }
  if (outcome === "slower") {
    return said("slower", `Compiled is about ${times(1 / s.median)} slower`, `compiled is slower, about ` +
      `${times(1 / s.median)} eager's time on this machine (${ratios}; the middle half of them all say slower).${graphs}`);
  }
  if (outcome === "busy" || outcome === "too_few") {
    return said("unclear", `Can't tell: ${OUTCOME_WORDS[outcome].replace(/^can't tell \((.*)\)$/, "$1")}`,
      `can't tell: ${reason} (speed-up ${s.median.toFixed(2)}×, ${ratios}, not shown as a verdict).${graphs}`);
  }
  const reasons = noiseReasons(entry, series);
  return said("unclear", "Can't tell: within the noise", "can't tell on this machine, compiled and eager are within " +
    `each other's noise (speed-up ${s.median.toFixed(2)}×, ${ratios}, between ${s.low.toFixed(2)}× and ${s.high.toFixed(2)}× ` +
    `in the middle half of them).${graphs}`, reasons.length ? ` ${reasons.join(" ")}` : "");
}

export function renderTimings(container, result) {
  if (result.partial) {
    clear(container, h("p", { class: "empty measuring" }, "Measuring… Each compiled callable is timed " +
      "against eager, on the arguments it was called with, once the script has finished."));
    return;
  }
  const timings = result.timings ?? [];
  if (!timings.length) {
    clear(container, h("p", { class: "empty" }, emptyMessage(result)));
    return;
  }
  const figures = [];
  clear(container, h("div", { class: "timings" },
    timings.map((entry) => card(entry, result, figures))));
  drawFigures(container, figures);
}

function emptyMessage(result) {
  const e = result.error;
  if (e) return `No timings: the script ended with ${e.type}${e.line ? ` at line ${e.line}` : ""}; ` +
    "callables are only timed after a script that runs to its end.";
  if (result.options?.measure === false) {
    return "No timings: the 'measure' box was off for this run; switch it on and compile again.";
  }
  const failed = (result.stage_errors ?? []).find((s) => failedStep(s) === "timings");
  return failed ? `Timing failed: ${failed.message}`
    : "No timings: no compiled callable was called, so there was nothing to time.";
}

function card(entry, result, figures) {
  const env = result.environment ?? {};
  const device = entry.device === "cuda" ? `GPU${env.device_name ? `: ${env.device_name}` : ""}` : "CPU";
  const head = h("h3", {}, h("code", {}, `${entry.name}(${entry.arguments.join(", ")})`),
    entry.device ? h("span", { class: `chip device ${entry.device}` }, device) : null);
  if (entry.error) {
    return h("article", { class: "timing-card" }, head, h("p", { class: "verdict unknown" }, entry.error));
  }
  return h("article", { class: "timing-card" }, head,
    speedVerdict(entry, result),
    verdict(entry.correctness),
    h("p", { class: "muted" }, `on ${entry.inputs ?? "the recorded arguments"}` +
      (entry.replayed?.length ? ` · ran compiled graph${entry.replayed.length > 1 ? "s" : ""} ${entry.replayed.join(", ")}` : "") +
      ` · clock: ${entry.clock}`),
    endToEnd(entry),
    launches(entry.kernels, entry.e2e.cold ?? entry.e2e.warm),
    renderAttribution(entry.attribution),
    entry.notes.map((note) => h("p", { class: "note" }, note)),
    entry.peaks ? h("p", { class: "muted" }, `Peaks: ${entry.peaks.bandwidth_gbps.toFixed(0)} GB/s memory ` +
      `bandwidth (${entry.peaks.bandwidth_source}; a 1 GiB copy reached ${entry.peaks.copy_gbps.toFixed(0)} GB/s), ` +
      `${entry.peaks.bf16_tflops.toFixed(0)} TFLOP/s bf16 (${entry.peaks.how})`) : null,
    Object.values(entry.plots).filter(Boolean).map((figure) => {
      const plot = h("div", { class: "timing-plot" });
      const [shown, legend] = figure.layout.barmode === "stack" ? stackLegend(figure) : [figure, null];
      figures.push([plot, shown]);
      return h("figure", {}, h("figcaption", {}, figure.layout.title?.text ?? ""), plot, legend);
    }),
    ["compiled", "eager"].map((mode) => kernelTable(mode, entry.kernels)));
}

// A stacked bar figure's legend, one line a bar: each segment's colour, kernel and time per call.
// The segments are coloured here, in order within their bar, so that legend and bars agree.
const SEGMENT_COLOURS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
                         "#ff9da7", "#9c755f", "#1f77b4", "#8c564b", "#17becf", "#bcbd22"];
const OTHER_COLOUR = "#9a9a9a", OUTSIDE_COLOUR = "#d9d9d9"; // OUTSIDE: plots.py's segment of the rest of a call
const plain = (label) => new DOMParser().parseFromString(label, "text/html").documentElement.textContent;

function stackLegend(figure) {
  const bars = new Map(); // bar (legend group) -> its traces, bottom first
  const data = figure.data.map((trace) => {
    const segments = bars.get(trace.legendgroup) ?? bars.set(trace.legendgroup, []).get(trace.legendgroup);
    const color = trace.name === "other" ? OTHER_COLOUR : trace.name.startsWith("outside the kernels") ? OUTSIDE_COLOUR
      : SEGMENT_COLOURS[segments.length % SEGMENT_COLOURS.length];
    segments.push({ ...trace, marker: { ...trace.marker, color } });
    return segments.at(-1);
  });
  const legend = h("div", { class: "plot-legend", "aria-label": "Legend" }, [...bars].map(([bar, segments]) =>
    h("p", {}, h("strong", {}, `${bar}: `), segments.map((trace) => h("span", { class: "plot-key" },
      h("i", { style: `background: ${trace.marker.color}` }), `${plain(trace.name)} ${duration(trace.y[0] / 1e3)}`)))));
  return [{ ...figure, data }, legend];
}

function verdict(c) {
  const errors = () => `max abs error ${magnitude(c.max_abs)}, max rel ${magnitude(c.max_rel)}` +
    (c.rmse_vs_float64 ? `; RMSE against float64: compiled ${magnitude(c.rmse_vs_float64.compiled)}, ` +
      `eager ${magnitude(c.rmse_vs_float64.eager)}` : "") +
    (c.cosine != null ? `; cosine similarity ${c.cosine.toFixed(5)}` : "");
  const judged = c.reference === "float64"
    ? "judged as PyTorch's benchmark runner does, against a float64 run"
    : "judged against eager (the callable could not run in float64)";
  if (c.ok === true) {
    return h("p", { class: "verdict ok" }, h("strong", {}, "✓ Same output"),
      `: compiled matches eager, ${judged} (${errors()}; ${c.dtypes.join(", ")})`);
  }
  if (c.ok === false) {
    return h("p", { class: "verdict mismatch" }, h("strong", {}, "✗ Mismatch"),
      `: compiled output differs from eager, ${judged} (${c.reason ?? errors()})`);
  }
  return h("p", { class: "verdict unknown" }, h("strong", {}, "? Not comparable"),
    `: ${c.reason.replace(/^not comparable:\s*/, "")}. ` +
    "The times below are real; whether compiled computes the same thing is unknown.");
}

function endToEnd(entry) {
  const gpu = entry.device === "cuda";
  const labels = { warm: gpu ? "GPU, warm, each call on its own" : "CPU, warm",
                   cold: "GPU, cold (L2 flushed before each call)",
                   throughput: "GPU, back-to-back calls",
                   cudagraphs: "GPU, CUDA graphs (mode='reduce-overhead')" };
  const cell = (stats) => h("td", {}, duration(stats.median_ms),
    h("small", { class: "muted" }, " ", term("IQR", TERMS.iqr), ` ${duration(stats.q1_ms)}–${duration(stats.q3_ms)}`));
  const busy = (s) => s.contention?.busy ? `\nCan't tell: ${s.contention.busy}.` : "";
  const clock = (s) => s.gpu_clock?.sm_mhz != null ? `\nGPU clock ${s.gpu_clock.sm_mhz.toFixed(0)} of ` +
    `${s.gpu_clock.max_sm_mhz.toFixed(0)} MHz, ${s.gpu_clock.power_w.toFixed(0)} W of ${s.gpu_clock.power_limit_w.toFixed(0)} W ` +
    `(NVML, ${s.gpu_clock.samples} samples).` : "";
  const row = (name, s) => h("tr", { dataset: { series: name } },
    h("th", { title: `${s.how ?? s.label ?? ""}\n${s.eager.samples} samples of ${s.calls_per_sample} call${s.calls_per_sample > 1 ? "s" : ""}${longSpanNote(s)}${busy(s)}${clock(s)}` },
      labels[name], hostBound(s) ? [" ", h("span", { class: "chip" }, term("host-bound", TERMS.hostBound))] : null,
      s.gpu_clock?.note ? [" ", h("span", { class: "chip", title: s.gpu_clock.note }, "power-capped")] : null),
    cell(s.eager), cell(s.compiled ?? s.cudagraphs),
    s.speedup ? h("td", { class: "speedup", title: `${s.speedup.how ?? ""} (${s.speedup.pairs} pairs)` },
      speedupText(s))
      : h("td", { class: "speedup mismatch" }, "not reported (outputs differ)"));
  return labelled(h("table", { class: "timing-table e2e" },
    h("caption", {}, "End to end, per call (median of interleaved samples)"),
    h("tr", {}, ["series", "eager", "compiled", [term("speed-up", TERMS.speedup), " (median of per-turn ratios)"]]
      .map((c) => h("th", {}, c))),
    Object.keys(labels).filter((name) => entry.e2e[name]).map((name) => row(name, entry.e2e[name])),
    clockNote(entry.e2e.warm)));
}

// Where the power cap held the GPU's clock over the warm series, the sentence saying so: its
// figures differ from do_bench's for that reason, not the method's (bench/gpu_clock_regimes.py).
function clockNote(warm) {
  const note = warm?.gpu_clock?.note;
  return note ? h("tr", { class: "clock-note" }, h("td", { colspan: 4 }, `Warm series: ${note}.`)) : null;
}

// Per side: launches and busy time per call, of the profiled call where the CPU profiled it (its
// own time beside the call's unprofiled median), or why the profile's times are withheld.
function launches({ totals }, e2e) {
  const part = (mode) => {
    const t = totals[mode];
    if (t.withheld) return [`${mode}: `, term("busy", TERMS.busy), ` and per-kernel times withheld, ${t.withheld}`];
    const of = t.wall_us_per_call != null
      ? ` (${(100 * t.busy_share).toFixed(0)}% of the profiled call, ${duration(t.wall_us_per_call / 1e3)}; ` +
        `${duration(e2e[mode].median_ms)} without the profiler)`
      : t.busy_share != null ? ` (${(100 * t.busy_share).toFixed(0)}% of the call)` : "";
    return [`${mode} ${+t.launches_per_call.toFixed(1)} launches, ${duration(t.us_per_call / 1e3)} `,
      term("busy", TERMS.busy), of];
  };
  return h("p", { class: "launches" }, h("strong", {}, "Per call: "), part("eager"), " · ", part("compiled"));
}

// CUDA library kernels are demangled C++: long names lose their template arguments and
// anonymous namespaces here (`multi_tensor_apply_kernel<…>(…Copy<…>)`); hover shows the full one.
function shortName(name) {
  if (name.length <= 60) return name;
  let depth = 0, short = "";
  for (const ch of name.replace(/^void /, "").replaceAll("(anonymous namespace)::", "")) {
    if (ch === "<" && depth++ === 0) short += "<…";
    else if (ch === ">" && --depth === 0) short += ">";
    else if (depth === 0 && ch !== "<" && ch !== ">") short += ch;
  }
  return short;
}

function kernelTable(mode, kernels) {
  const rows = kernels[mode];
  if (kernels.totals[mode].withheld) return null; // the launches line says why
  const rates = RATES.filter(([key]) => rows.some((r) => r[key] != null));
  const headers = ["kernel", "kind", "launches", "time per call", ...rates.map(([, label]) => label)];
  const row = (r) => h("tr", {},
    h("td", { class: "kernel-name", title: r.name + (r.grid ? `\ngrid ${r.grid} · block ${r.block} · ` +
      `${r.registers} registers` : "") }, shortName(r.name)),
    h("td", {}, r.kind), h("td", {}, +r.launches.toFixed(1)), h("td", {}, duration(r.us_per_call / 1e3)),
    rates.map(([key, , format]) => h("td", key === "gbps" && r.bytes_source ? // where its bytes come from
      { title: `${magnitude(r.gb_per_call * 1e3)} MB per call: ${r.bytes_source}` } : {},
    r[key] != null ? format(r[key]) : "")));
  return h("details", { class: "kernels", open: mode === "compiled", dataset: { mode } },
    h("summary", {}, `${mode === "compiled" ? "Compiled" : "Eager"} per kernel (${rows.length} rows; ` +
      `${kernels.cache}, ${kernels.calls_profiled} calls profiled` +
      `${kernels.rounds > 1 ? `, the least disturbed of ${kernels.rounds} rounds` : ""})`),
    h("table", { class: "timing-table" }, h("tr", {}, headers.map((c) => h("th", {}, c))), rows.map(row)));
}

// The figures follow the page's theme (its CSS colours); their titles are the captions above them.
async function drawFigures(container, figures) {
  const css = getComputedStyle(document.documentElement);
  const fg = css.getPropertyValue("--fg").trim(), grid = css.getPropertyValue("--border").trim();
  const axis = (a) => ({ ...a, gridcolor: grid, zerolinecolor: grid, automargin: true });
  try {
    await loadPlotly();
  } catch (error) {
    for (const [plot] of figures) clear(plot, h("p", { class: "empty" }, `Figure unavailable: ${error.message}`));
    return;
  }
  for (const [plot, { data, layout: { title, ...layout } }] of figures) {
    if (!plot.isConnected) return; // the pane moved on
    await window.Plotly.newPlot(plot, data, {
      ...layout, margin: { l: 56, r: 8, t: 8, b: 8 }, // l: room for the y axis's title, whatever its ticks paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: "rgba(0,0,0,0)", font: { color: fg }, xaxis: axis(layout.xaxis), yaxis: axis(layout.yaxis),
      legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom", bgcolor: "rgba(0,0,0,0)" },
    }, { displaylogo: false, responsive: true });
  }
  container.dataset.ready = "1";
}
