// The Kernels stage's list: one row per kernel (name, kind, nodes, user lines, measured time);
// a kernel's name jumps to its source in the pane, a user line selects it in the editor.
// Names and nodes reach the page as text only (dom.js).

import { h } from "./dom.js";

function duration(us) {
  return us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(us >= 100 ? 0 : 1)} µs`;
}

function nodesText(nodes) {
  return nodes.length > 6 ? `${nodes.slice(0, 6).join(", ")} … (${nodes.length})` : nodes.join(", ");
}

export function renderKernelList(kernels, { onJump, onUserLine }) {
  const timed = kernels.some((k) => k.time);
  const row = (k) => h("tr", { dataset: { kernel: k.label } },
    h("td", {}, h("button", { class: "link kernel-jump", title: `Go to ${k.label}`, onclick: () => onJump(k.line) },
      k.label)),
    h("td", {}, k.kind),
    h("td", { class: "kernel-nodes", title: k.nodes.join(", ") }, nodesText(k.nodes)),
    h("td", {}, k.lines.map((line) => h("button", { class: "link user-line", title: `Select line ${line}`,
                                                      onclick: () => onUserLine(line) }, String(line)))),
    timed ? h("td", { title: k.time ? `per call of ${k.time.callable}` : "" },
      k.time ? duration(k.time.us) : "") : null);
  return h("details", { class: "kernel-list", open: true },
    h("summary", {}, `${kernels.length} kernel${kernels.length === 1 ? "" : "s"}`),
    h("table", {}, h("tr", {}, ["kernel", "kind", "nodes", "user lines", timed ? "time per call" : null]
      .filter(Boolean).map((c) => h("th", {}, c))), kernels.map(row)));
}
