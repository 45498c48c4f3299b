// Recompiles and the run at a glance: a gutter mark at the user's line whose call recompiled,
// and the summary strip under the top bar ("2 graphs, 1 break (l.13), 1 recompile (l.11: k
// changed: 1 -> 2)"). Reads `compiles`, `graph_breaks` and `recompiles` of the result; a
// reason is shown as its one line (`summary`), PyTorch's own text (`detail`) on hover.

import { h, clear } from "./dom.js";

const MOST = 3; // items named per kind in the strip; the rest are counted, all are on hover

const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
const oneLine = (r) => r.summary ?? r.reason; // a result stored before `summary`

// Each recompile's reasons, by compile id in order: the first names the newest entry it missed.
function byCompile(result) {
  const found = new Map();
  for (const r of result?.recompiles ?? []) found.set(r.compile_id, [...(found.get(r.compile_id) ?? []), r]);
  return [...found.values()];
}

const stated = (r) => `${r.previous ? `${r.previous}: ` : ""}${r.detail ?? r.reason}`;

// One gutter mark per recompile, at the line whose call recompiled; PyTorch's text on hover.
export function recompileMarks(result) {
  return byCompile(result).filter(([first]) => first.line).map((reasons) => ({
    line: reasons[0].line, severity: "info", title: "recompile", text: oneLine(reasons[0]),
    render: () => h("div", { class: "mark-message", title: reasons.map(stated).join("\n") },
      h("strong", {}, `Recompile (${reasons[0].compile_id}): `), oneLine(reasons[0]),
      reasons.length > 1 ? h("ul", {}, reasons.map((r) => h("li", {}, `${r.previous ?? "?"}: ${oneLine(r)}`))) : null),
  }));
}

// One break per line and reason: a recompiled frame reports the same break again.
export function uniqueBreaks(result) {
  const unique = new Map((result?.graph_breaks ?? []).map((b) => [`${b.line} ${b.reason}`, b]));
  return [...unique.values()];
}

// " (l.11: k changed: 1 -> 2; l.12: …; 2 more)": the first items, their lines as links.
function items(list, onLine) {
  const named = list.filter((item) => item.line || item.text);
  if (!named.length) return "";
  const shown = named.slice(0, MOST).map(({ line, text, title }, i) => [i ? "; " : "", h("span", { title },
    line ? h("button", { class: "line-link", title: `Show line ${line} in the editor`, onclick: () => onLine(line) }, `l.${line}`) : "",
    text ? `${line ? ": " : ""}${text}` : "")]);
  return [" (", shown, named.length > MOST ? `; ${named.length - MOST} more` : "", ")"];
}

export function showSummary(strip, result, onLine) {
  strip.hidden = !result;
  if (!result) {
    clear(strip);
    return;
  }
  const graphs = (result.compiles ?? []).filter((c) => c.has_graph).length;
  const breaks = uniqueBreaks(result).map((b) => ({ line: b.line, text: null, title: `line ${b.line ?? "?"}: ${b.reason}` }));
  const recompiles = byCompile(result).map(([r]) => ({ line: r.line, text: oneLine(r), title: `${r.compile_id}: ${r.detail ?? r.reason}` }));
  clear(strip, h("span", {}, plural(graphs, "graph")), ", ",
    h("span", { class: "summary-breaks" }, plural(breaks.length, "break"), items(breaks, onLine)), ", ",
    h("span", { class: "summary-recompiles" }, plural(recompiles.length, "recompile"), items(recompiles, onLine)));
}
