// The Kernels stage's list: one item per kernel (name, kind, measured time; nodes, user lines);
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
  // One item a kernel: name (jump), kind and time on its first line, its nodes and user lines
  // below, so that a narrow pane wraps the nodes instead of squeezing a table column.
  const item = (k) => h("li", { dataset: { kernel: k.label } },
    h("div", { class: "kernel-head" },
      h("button", { class: "link kernel-jump", title: `Go to ${k.label}`, onclick: () => onJump(k.line) },
        k.label),
      h("span", { class: "kernel-kind" }, k.kind),
      k.time ? h("span", { class: "kernel-time", title: `per call of ${k.time.callable}` },
        duration(k.time.us)) : null),
    h("div", { class: "kernel-meta" },
      h("span", { class: "kernel-nodes", title: k.nodes.join(", ") }, nodesText(k.nodes)),
      k.lines.length ? h("span", { class: "kernel-lines" }, "lines",
        k.lines.map((line) => h("button", { class: "link user-line", title: `Select line ${line}`,
                                          onclick: () => onUserLine(line) }, String(line)))) : null));
  return h("details", { class: "kernel-list", open: true },
    h("summary", {}, `${kernels.length} kernel${kernels.length === 1 ? "" : "s"}`),
    h("ul", {}, kernels.map(item)));
}
