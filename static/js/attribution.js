// Kernel attribution (issue 44): what each compiled kernel replaced of the eager program and what
// it saved, from a timing's `attribution` (compiler_core/features/timings/attribution.py): a waterfall from
// eager's call to compiled's, then a table sorted by time saved, each kernel linked to its source
// (the Kernels stage of its compile) and to the user's lines. A kernel slower than the eager ops
// it replaced is marked, with why from what was measured. The links ask the page through events
// ("torchbolt-line", "torchbolt-kernel") that main.js answers. User text goes through dom.js.

import { h, labelled, lineLink } from "./dom.js";

function us(value) {
  const size = Math.abs(value);
  return size >= 1e3 ? `${(value / 1e3).toFixed(size >= 1e4 ? 1 : 2)} ms`
    : `${value.toFixed(size >= 100 ? 0 : 1)} µs`;
}

const SHOWN_ROWS = 12; // the rest folded: the rows a speaker shows first

const ask = (from, name, detail) => from.dispatchEvent(new CustomEvent(name, { bubbles: true, detail }));

export function renderAttribution(attribution) {
  if (!attribution) return null;
  const title = h("h4", {}, "What each compiled kernel replaced, and what it saved");
  if (attribution.withheld) return h("section", { class: "attribution" }, title, h("p", { class: "muted" }, attribution.withheld));
  const cost = attribution.cost_s != null ? ` Reading the profiles for it took ${(attribution.cost_s * 1e3).toFixed(0)} ms of the job.` : "";
  return h("section", { class: "attribution" }, title,
    h("p", { class: "attribution-headline" }, attribution.headline),
    waterfall(attribution), table(attribution.rows),
    h("p", { class: "muted" }, `${attribution.error} Eager times per call of the eager profile, compiled ` +
      `times of the compiled profile (${attribution.e2e_series} series for the calls end to end).${cost}` +
      (attribution.bytes ? ` ${attribution.bytes}` : "")));
}

// From eager's call to compiled's: each kind of row's saving (green) or cost (red), as floating
// bars on one scale, the two calls as whole bars.
function waterfall({ waterfall: steps }) {
  let level = 0;
  const bars = steps.map((step) => {
    if (step.total) {
      level = step.us;
      return { label: step.label, from: 0, to: step.us, kind: "total", text: us(step.us) };
    }
    const from = level;
    level -= step.saved_us;
    return { label: step.label, from, to: level, kind: step.saved_us >= 0 ? "saved" : "cost",
             text: `${step.saved_us >= 0 ? "−" : "+"}${us(Math.abs(step.saved_us))}` };
  });
  const ends = bars.flatMap((b) => [b.from, b.to]);
  const low = Math.min(0, ...ends); // below zero where profiled kernels outran a call
  const span = Math.max(...ends) - low || 1;
  return h("div", { class: "waterfall", role: "img", "aria-label": "Waterfall from eager's call to compiled's" },
    bars.map((bar) => {
      const left = (100 * (Math.min(bar.from, bar.to) - low)) / span;
      const width = Math.max((100 * Math.abs(bar.to - bar.from)) / span, 0.3);
      return h("div", { class: `waterfall-row ${bar.kind}` },
        h("span", { class: "waterfall-label" }, bar.label),
        h("span", { class: "waterfall-track" },
          h("i", { style: `left: ${left.toFixed(2)}%; width: ${width.toFixed(2)}%` })),
        h("span", { class: "waterfall-value" }, bar.text));
    }));
}

// The eager ops a row replaced, each op once with its count; nodes on hover. "≈": its time is an
// even split by name (eager called it a number of times the graphs don't hold); "shared": the
// node's work is split over (or recomputed in) several kernels.
function eagerOps(row) {
  const ops = new Map();
  for (const op of row.eager_ops) {
    const seen = ops.get(op.op) ?? ops.set(op.op, { count: 0, nodes: [], marks: new Set() }).get(op.op);
    seen.count += 1;
    if (op.node) seen.nodes.push(op.node);
    if (op.matched && !["order", "line"].includes(op.matched)) seen.marks.add("≈");
    if (op.shared) seen.marks.add(`shared by ${op.shared} kernels`);
  }
  const recomputed = row.recomputed?.length ? h("span", { class: "chip", title: `post-grad nodes also computed by ` +
    `another kernel: ${[...new Set(row.recomputed)].join(", ")}` }, "recomputes") : null;
  return [[...ops].map(([name, seen], i) => h("span", { class: "eager-op", title: `Dynamo nodes: ${seen.nodes.join(", ")}` +
      (seen.marks.has("≈") ? "\n≈ its eager time is an even split of the op's calls by name" : "") },
    i ? ", " : "", name.replace(/^aten::/, ""), seen.count > 1 ? ` ×${seen.count}` : "",
    [...seen.marks].map((mark) => ` (${mark})`).join(""))), recomputed ? [" ", recomputed] : null];
}

// A CUDA graph replay's row names the replay, then its graph's kernels (links) and the kernels
// the profiler saw it run, each with its time per call.
function kernelCell(row) {
  const sources = row.source ?? [];
  if (!sources.length) return h("td", { class: "kernel-name", title: row.kernel }, row.kernel);
  const links = sources.map(({ compile, name, graph }) => h("button", {
    class: "kernel-link", title: `Show ${name} in the Kernels stage of compile ${compile}` + (graph ? ` (${graph})` : ""),
    onclick: (event) => ask(event.currentTarget, "torchbolt-kernel", { compile, name }),
  }, name));
  if (!row.inside) return h("td", { class: "kernel-name" }, links);
  return h("td", { class: "kernel-name" }, h("div", {}, row.kernel), links,
    h("details", { class: "replay-inside" }, h("summary", {}, `${row.inside.length} kernels it ran`),
      row.inside.map((k) => h("div", { title: k.kernel }, `${us(k.compiled_us)} ${k.kernel}`))));
}

function table(rows) {
  const bytes = rows.some((r) => r.compiled_gb != null); // GPU: the compiled kernels' bytes moved
  const headers = ["compiled kernel", "eager ops it replaced", "eager", "compiled", ...(bytes ? ["compiled MB"] : []),
    "saved", "lines"];
  const row = (r) => [h("tr", { class: `attribution-row ${r.kind.replace(/ /g, "-")}${r.slower ? " slower" : ""}`,
      dataset: { kernel: r.kernel } },
    kernelCell(r), h("td", {}, r.kind === "outside" ? "launches, framework, Python" : eagerOps(r)),
    h("td", {}, us(r.eager_us)), h("td", {}, us(r.compiled_us)),
    bytes ? h("td", {}, r.compiled_gb != null ? (r.compiled_gb * 1e3).toPrecision(3) : "") : null,
    h("td", { class: r.saved_us < 0 ? "cost" : "saved" }, us(r.saved_us)),
    h("td", {}, (r.lines ?? []).map((line) => lineLink(line, () => ask(document, "torchbolt-line", { line }))))),
    r.slower ? h("tr", { class: "slower-why" }, h("td", { colspan: headers.length }, "Slower than eager: ", r.slower)) : null];
  const table = (caption, shown) => labelled(h("table", { class: "timing-table attribution-table" },
    h("caption", {}, caption), h("tr", {}, headers.map((c) => h("th", {}, c))), shown.map(row)));
  const rest = rows.slice(SHOWN_ROWS);
  return [table("Per compiled kernel, per call, sorted by time saved", rows.slice(0, SHOWN_ROWS)),
    rest.length ? h("details", { class: "attribution-rest" }, h("summary", {}, `${rest.length} more rows`),
      table("The rest, sorted by time saved", rest)) : null];
}
