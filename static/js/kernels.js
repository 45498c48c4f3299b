// The Kernels stage's list: one item per kernel (name, kind, measured time; nodes, user lines);
// a kernel's name jumps to its source in the pane, a user line selects it in the editor. Below
// each kernel, from the scheduler's fusion log (compile.fusion): what fused into it, and the
// neighbours that did not, with PyTorch's reason. Names reach the page as text only (dom.js).

import { h } from "./dom.js";

const SHOWN = 6; // fusion decisions shown per kernel before a "more" fold

function duration(us) {
  return us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(us >= 100 ? 0 : 1)} µs`;
}

function nodesText(nodes) {
  return nodes.length > 6 ? `${nodes.slice(0, 6).join(", ")} … (${nodes.length})` : nodes.join(", ");
}

function lineButtons(lines, onUserLine) {
  return lines.map((line) => h("button", { class: "link user-line", title: `Select line ${line}`,
                                          onclick: () => onUserLine(line) }, String(line)));
}

// "fused op0 (sin) + op1 (sum)" and "not fused: op2 (cos) with op3 (sum_1) (into cpp_fused_x_1):
// no shared data", each scheduler node with the FX nodes it came from.
function fusionLines(kernel, { fused, refused }, onUserLine) {
  const other = (d) => d.kernels.filter((k) => k && k !== kernel.name);
  const named = (d) => d.nodes.map((n, i) => d.origins[i]?.length ? `${n} (${d.origins[i].join(", ")})` : n);
  const decision = (d, text) => h("div", { class: "kernel-meta kernel-fusion", title: d.reason },
    h("span", { class: "kernel-nodes" }, text),
    d.lines.length ? h("span", { class: "kernel-lines" }, "lines", lineButtons(d.lines, onUserLine)) : null);
  const lines = [
    ...fused.map((d) => decision(d, `fused ${named(d).join(" + ")}`)),
    ...refused.map((d) => decision(d, `not fused: ${named(d).join(" with ")}` +
      `${other(d).length ? ` (into ${other(d).join(", ")})` : ""}: ${d.reason}`)),
  ];
  return lines.length <= SHOWN ? lines : [...lines.slice(0, SHOWN),
    h("details", {}, h("summary", {}, `${lines.length - SHOWN} more fusion decisions`), lines.slice(SHOWN))];
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
      k.lines.length ? h("span", { class: "kernel-lines" }, "lines", lineButtons(k.lines, onUserLine)) : null),
    k.fusion ? fusionLines(k, k.fusion, onUserLine) : null);
  return h("details", { class: "kernel-list", open: true },
    h("summary", {}, `${kernels.length} kernel${kernels.length === 1 ? "" : "s"}`),
    h("ul", {}, kernels.map(item)));
}
