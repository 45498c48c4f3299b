// "Why" on the GPU, below the graph breaks: why CUDA graphs were skipped or recorded again
// (result.cudagraphs, Inductor's own cudagraphs log) and which choices max-autotune benchmarked
// (each compile's autotuning, the winner marked). Nothing when the run has neither.

import { h, lineLink } from "./dom.js";

export function whySections(result, onLine) {
  return [cudagraphsSection(result?.cudagraphs, onLine), autotuningSection(result?.compiles ?? [])];
}

function at(entry, onLine) {
  return [entry.line ? [" at ", lineLink(entry.line, onLine)] : "",
    entry.compile_id ? ` in ${entry.compile_id}` : ""];
}

function cudagraphsSection(report, onLine) {
  if (!report) return null;
  const { skips, rerecords, recordings, partitions } = report;
  return h("section", { class: "why-cudagraphs" },
    h("h4", {}, `CUDA graphs: ${skips.length} skipped, ${recordings.length} recorded, ` +
      `${rerecords.length} recorded again`),
    skips.map((s) => h("article", { class: "break-card" },
      h("h3", {}, "CUDA graphs skipped", s.function ? ` for ${s.function}` : "", at(s, onLine)),
      h("p", { class: "message" }, s.reason))),
    rerecords.map((r) => h("article", { class: "break-card" },
      h("h3", {}, `Recorded again: ${r.function ?? "?"}`, r.mode ? ` (${r.mode})` : "", at(r, onLine)),
      h("p", { class: "message" }, r.reason))),
    partitions.map((p) => h("pre", { class: "traceback" }, p.compile_id ? `${p.compile_id}: ` : "", p.text)),
    h("details", {}, h("summary", {}, `Inductor's cudagraphs log (${report.messages.length} lines` +
      `${report.truncated ? ", cut" : ""})`),
      h("pre", { class: "traceback" }, report.messages.map((m) =>
        `${m.compile_id ? `[${m.compile_id}] ` : ""}${m.level} ${m.text}\n`))));
}

function autotuningSection(compiles) {
  const tuned = compiles.flatMap((c) => (c.autotuning ?? []).map((op) => ({ id: c.id, op })));
  if (!tuned.length) return null;
  return h("section", { class: "why-autotuning" },
    h("h4", {}, "Autotuning: the choices Inductor benchmarked (the fastest wins)"),
    tuned.map(({ id, op }) => h("table", { class: "timing-table" },
      h("caption", {}, `${op.op}(${op.inputs.join(", ")}) in ${id}`),
      h("tr", {}, h("th", {}, "choice"), h("th", {}, "ms"), h("th", {}, "")),
      op.choices.map((c) => h("tr", { class: c.winner ? "speedup" : null, title: c.description || null },
        h("td", {}, c.name), h("td", {}, c.ms === null ? "failed" : c.ms.toFixed(4)),
        h("td", {}, c.winner ? "★ winner" : ""))))));
}
