// Recompiles and the run at a glance: a gutter mark at the line of the guarded value (else the
// user's line whose call recompiled), and the summary strip under the top bar ("2 graphs,
// 1 break (l.13), 1 recompile (l.11: k changed: 1 -> 2)"). Reads `compiles`, `graph_breaks`
// and `recompiles` of the result; a reason is shown as its one line (`summary`), PyTorch's own
// text (`detail`) on hover.

import { h, clear } from "./dom.js";

const MOST = 3; // items named per kind in the strip; the rest are counted, all are on hover

const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
const oneLine = (r) => r.summary ?? r.reason; // a result stored before `summary`

// One entry per recompile, its `misses` (the failed guard of each cache entry it tried, newest
// first) in order; a result stored before they were grouped had one entry per miss.
function byCompile(result) {
  const found = new Map();
  for (const r of result?.recompiles ?? []) {
    const known = found.get(r.compile_id);
    if (known) known.misses.push(...(r.misses ?? [r]));
    else found.set(r.compile_id, { ...r, misses: [...(r.misses ?? [r])] });
  }
  return [...found.values()];
}

const stated = (r) => `${r.previous ? `${r.previous}: ` : ""}${r.detail ?? r.reason}`;
// Where a recompile is marked: the line of the guarded value (the `.item()` whose value the
// guard holds), else the line whose call recompiled.
const markLine = (r) => r.source_line ?? r.line;

// One gutter mark per recompile; the call's line and PyTorch's text on hover.
export function recompileMarks(result) {
  return byCompile(result).filter((r) => markLine(r)).map((r) => ({
    line: markLine(r), severity: "info", title: "recompile", text: oneLine(r),
    render: () => h("div", { class: "mark-message", title: r.misses.map(stated).join("\n") },
      h("strong", {}, `Recompile (${r.compile_id}): `), oneLine(r),
      r.line && r.line !== markLine(r) ? h("p", {}, `The call on line ${r.line} recompiled.`) : null,
      r.misses.length > 1 ? h("ul", {}, r.misses.map((m) => h("li", {}, `${m.previous ?? "?"}: ${oneLine(m)}`))) : null),
  }));
}

// One break per line and reason, for the gutter: a recompiled frame breaks there again.
export function uniqueBreaks(result) {
  const unique = new Map((result?.graph_breaks ?? []).map((b) => [`${b.line} ${b.reason}`, b]));
  return [...unique.values()];
}

// The strip's items: each line once, with how many of the list are there.
function byLine(list, lineOf) {
  const lines = new Map();
  for (const item of list) lines.set(lineOf(item), [...(lines.get(lineOf(item)) ?? []), item]);
  return [...lines];
}

const breakLines = (result) => byLine(result?.graph_breaks ?? [], (b) => b.line).map(([line, list]) => ({
  line, text: null, times: list.length,
  title: list.map((b) => `${b.compile_id}, line ${b.line ?? "?"}: ${b.gb_type ?? b.reason}`).join("\n") }));

// A value that recompiles on every new value is one item, its first recompile's reason shown.
const recompileLines = (result) => byLine(byCompile(result), markLine).map(([line, list]) => ({
  line, text: oneLine(list[0]), times: list.length,
  title: list.map((r) => `${r.compile_id}: ${r.misses.map(stated).join("\n")}`).join("\n\n") }));

// " (l.11 ×2: k changed: 1 -> 2; l.12: …; 2 more)": the first items, their lines as links.
function items(list, onLine) {
  const named = list.filter((item) => item.line || item.text);
  if (!named.length) return "";
  const shown = named.slice(0, MOST).map(({ line, text, title, times }, i) => [i ? "; " : "", h("span", { title },
    line ? h("button", { class: "line-link", title: `Show line ${line} in the editor`, onclick: () => onLine(line) }, `l.${line}`) : "",
    times > 1 ? ` ×${times}` : "", text ? `${line ? ": " : ""}${text}` : "")]);
  return [" (", shown, named.length > MOST ? `; ${named.length - MOST} more` : "", ")"];
}

export function showSummary(strip, result, onLine) {
  strip.hidden = !result;
  if (!result) {
    clear(strip);
    return;
  }
  const graphs = (result.compiles ?? []).filter((c) => c.has_graph).length;
  // Every break PyTorch counted, as the Graph breaks tab lists them (features/breaks.py).
  const breaks = result.graph_breaks ?? [];
  clear(strip, h("span", {}, plural(graphs, "graph")), ", ",
    h("span", { class: "summary-breaks" }, plural(breaks.length, "break"), items(breakLines(result), onLine)), ", ",
    h("span", { class: "summary-recompiles" }, plural(byCompile(result).length, "recompile"), items(recompileLines(result), onLine)));
}
