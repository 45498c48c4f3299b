// Guards grouped by what they guard (`L['x']`, globals, global state), each pointing at the
// user line it came from. A tensor's TENSOR_MATCH guard is summarised as dtype/size/stride/grad.

import { h, lineLink } from "./dom.js";

const TENSOR_FIELDS = [
  [/torch\.(\w+)/, (m) => m[1]],
  [/size=(\[[^\]]*\])/, (m) => `size ${m[1]}`],
  [/stride=(\[[^\]]*\])/, (m) => `stride ${m[1]}`],
  [/requires_grad=(\w+)/, (m) => `requires_grad ${m[1]}`],
  [/DispatchKeySet\((\w+)/, (m) => m[1].toLowerCase()],
];

function describe(source) {
  if (!source) return ["Global state and other checks", "global"];
  if (source.startsWith("L[")) return [`local ${source}`, "local"];
  if (source.startsWith("G[")) return [`global ${source}`, "global"];
  return [source, "other"];
}

function tensorChips(code) {
  return TENSOR_FIELDS.map(([re, fmt]) => { const m = code.match(re); return m ? fmt(m) : null; })
    .filter(Boolean).map((text) => h("span", { class: "chip" }, text));
}

export function renderGuards(artifact, onLine) {
  const groups = new Map();
  for (const guard of artifact.guards ?? []) {
    const key = guard.source ?? "";
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(guard);
  }
  const rank = ([source, guards]) =>
    (guards.some((g) => g.kind === "TENSOR_MATCH") ? 0 : source ? 1 : 2);
  const ordered = [...groups.entries()].sort((a, b) => rank(a) - rank(b));
  return h("div", { class: "guards" },
    h("p", { class: "muted" }, `${artifact.guards?.length ?? 0} guards in ${groups.size} groups. ` +
      "The compiled code is reused only while all of them hold; a failing one triggers a recompile."),
    ordered.map(([source, guards]) => {
      const [title, kind] = describe(source || null);
      const isTensor = guards.some((g) => g.kind === "TENSOR_MATCH");
      return h("details", { class: `guard-group ${kind}`, open: isTensor || guards.length <= 4 },
        h("summary", {}, h("span", { class: "guard-source" }, title),
          isTensor ? h("span", { class: "chip tensor" }, "tensor") : null,
          h("span", { class: "muted" }, ` ${guards.length} guard${guards.length > 1 ? "s" : ""}`)),
        h("ul", {}, guards.map((g) => h("li", {},
          h("span", { class: "guard-kind" }, g.kind),
          g.kind === "TENSOR_MATCH" ? tensorChips(g.code) : null,
          g.line ? lineLink(g.line, onLine) : null,
          h("code", { class: "guard-code" }, g.code)))));
    }));
}
