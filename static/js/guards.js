// Guards grouped by what they guard (`L['x']`, globals, global state), each pointing at the
// user line it came from. A tensor's TENSOR_MATCH guard is summarised as dtype/size/stride/grad.
// Symbolic shape guards (relations between sizes) get their own group, first and open, each
// relation on its own line. Runs of one kind in another group (the five
// DIMENSION_DYNAMIC_MARKING_GUARDs of every tensor) fold into one line with a count. `failed`
// (guard index -> the recompiles whose reason names it) marks the guards whose failure made
// Dynamo compile again.

import { h, lineLink } from "./dom.js";

const TENSOR_FIELDS = [
  [/torch\.(\w+)/, (m) => m[1]],
  [/size=(\[[^\]]*\])/, (m) => `size ${m[1]}`],
  [/stride=(\[[^\]]*\])/, (m) => `stride ${m[1]}`],
  [/requires_grad=(\w+)/, (m) => `requires_grad ${m[1]}`],
  [/DispatchKeySet\((\w+)/, (m) => m[1].toLowerCase()],
];
const FOLD_AT = 3; // this many guards of one kind in a row fold into one line
const FOLD_NOTES = {
  DIMENSION_DYNAMIC_MARKING_GUARD: "the tensor has no dynamic/static dimension markings (mark_dynamic and kin)",
};
const SYMBOLIC = "\u0000symbolic"; // the group key of symbolic shape guards (no source is named so)

function describe(source) {
  if (source === SYMBOLIC) return ["Shape relations (symbolic guards)", "symbolic"];
  if (!source) return ["Global state and other checks", "global"];
  if (source.startsWith("L[")) return [`local ${source}`, "local"];
  if (source.startsWith("G[")) return [`global ${source}`, "global"];
  return [source, "other"];
}

function tensorChips(code) {
  return TENSOR_FIELDS.map(([re, fmt]) => { const m = code.match(re); return m ? fmt(m) : null; })
    .filter(Boolean).map((text) => h("span", { class: "chip" }, text));
}

function guardItem(guard, failedBy, onLine) {
  return h("li", { class: failedBy ? "failed" : "", dataset: { row: guard.row } },
    h("span", { class: "guard-kind" }, guard.kind),
    guard.kind === "TENSOR_MATCH" ? tensorChips(guard.code) : null,
    guard.line ? lineLink(guard.line, onLine) : null,
    failedBy ? h("span", { class: "chip failed", title: failedBy.map((r) => r.detail ?? r.reason).join("\n") },
      `failed → recompiled as ${failedBy.map((r) => r.compile_id).join(", ")}`) : null,
    h("code", { class: "guard-code" }, guard.code));
}

// Consecutive guards of one kind: [kind, [[guard, index], ...]] runs.
function runsOf(entries) {
  const runs = [];
  for (const entry of entries) {
    const last = runs.at(-1);
    if (last && last[0] === entry[0].kind) last[1].push(entry);
    else runs.push([entry[0].kind, [entry]]);
  }
  return runs;
}

function groupItems(entries, failed, onLine, fold) {
  return runsOf(entries).map(([kind, run]) => {
    const items = run.map(([guard, index]) => guardItem(guard, failed.get(index), onLine));
    if (!fold || run.length < FOLD_AT) return items;
    const anyFailed = run.some(([, index]) => failed.has(index));
    return h("li", { class: "guard-fold" }, h("details", { open: anyFailed },
      h("summary", {}, h("span", { class: "guard-kind" }, kind), h("span", { class: "chip count" }, `×${run.length}`),
        FOLD_NOTES[kind] ? h("span", { class: "muted" }, ` ${FOLD_NOTES[kind]}`) : null),
      h("ul", {}, items)));
  });
}

export function renderGuards(artifact, onLine, failed = new Map()) {
  const groups = new Map();
  (artifact.guards ?? []).forEach((guard, index) => {
    const key = guard.symbolic ? SYMBOLIC : guard.source ?? "";
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push([guard, index]);
  });
  const isTensor = (entries) => entries.some(([g]) => g.kind === "TENSOR_MATCH");
  const rank = ([source, entries]) => (source === SYMBOLIC ? 0 : isTensor(entries) ? 1 : source ? 2 : 3);
  const ordered = [...groups.entries()].sort((a, b) => rank(a) - rank(b));
  return h("div", { class: "guards" },
    h("p", { class: "muted" }, `${artifact.guards?.length ?? 0} guards in ${groups.size} groups. ` +
      "The compiled code is reused only while all of them hold; a failing one triggers a recompile."),
    ordered.map(([source, entries]) => {
      const [title, kind] = describe(source || null);
      const tensor = isTensor(entries);
      const anyFailed = entries.some(([, index]) => failed.has(index));
      const open = kind === "symbolic" || tensor || anyFailed || entries.length <= 4;
      return h("details", { class: `guard-group ${kind}`, open },
        h("summary", {}, h("span", { class: "guard-source" }, title),
          tensor ? h("span", { class: "chip tensor" }, "tensor") : null,
          h("span", { class: "muted" }, ` ${entries.length} guard${entries.length > 1 ? "s" : ""}`)),
        h("ul", {}, groupItems(entries, failed, onLine, kind !== "symbolic")));
    }));
}

// Guard index -> the recompiles whose reason names it, for the guards of compile `id`.
export function failedGuards(result, id) {
  const failed = new Map();
  for (const recompile of result?.recompiles ?? []) {
    // Each cache entry the recompile missed (a result stored before `misses` has one per entry).
    for (const miss of recompile.misses ?? [recompile]) {
      if (miss.previous !== id) continue;
      for (const index of miss.failed_guards ?? []) {
        failed.set(index, [...(failed.get(index) ?? []), { ...miss, compile_id: recompile.compile_id }]);
      }
    }
  }
  return failed;
}
