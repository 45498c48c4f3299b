// "Saved for backward", above a training compile's AOT graphs (compile.saved_activations): the
// values AOTAutograd's partitioner saved for the backward, with shape, dtype and size, and the
// forward ops the backward recomputes instead. Names reach the page as text only (dom.js).

import { h } from "./dom.js";

function size(bytes) {
  if (bytes === null) return "?";
  if (bytes < 1024) return `${bytes} B`;
  return bytes < 1 << 20 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / (1 << 20)).toFixed(1)} MiB`;
}

function rows(values, onUserLine) {
  return values.map((v) => h("tr", {},
    h("td", {}, v.name),
    h("td", { class: "op" }, v.input ? "graph input" : v.op),
    h("td", {}, v.dtype ?? "?", h("wbr"), `[${(v.shape ?? []).join(", ")}]`), // may break before its shape
    h("td", { class: "size" }, size(v.bytes)),
    h("td", {}, v.lines.map((line) => h("button", { class: "link user-line", title: `Select line ${line}`,
                                                  onclick: () => onUserLine(line) }, String(line))))));
}

function table(caption, values, onUserLine) {
  return h("table", { class: "timing-table" }, h("caption", {}, caption),
    h("tr", {}, ["value", "op", "type", "size", "lines"].map((t) => h("th", {}, t))),
    rows(values, onUserLine));
}

// The section beside a graph of `compile` (the stages whose catalogue `panel` is "saved"); null
// when it has nothing to say.
export function renderSaved(compile, onUserLine) {
  const saved = compile?.saved_activations;
  if (!saved) return null;
  const { recomputed } = saved;
  if (!saved.saved.length) {
    return h("details", { class: "kernel-list saved-list", open: true },
      h("summary", {}, "Saved for backward: nothing"),
      h("p", { class: "note" }, "This forward saves no tensors for the backward: AOTAutograd's partitioner " +
        "marks none of its outputs saved, so the backward needs only the gradients of the outputs."));
  }
  return h("details", { class: "kernel-list saved-list", open: true },
    h("summary", {}, `Saved for backward: ${saved.saved.length} values, ${size(saved.saved_bytes)}` +
      `; ${recomputed.length} op${recomputed.length === 1 ? "" : "s"} recomputed in the backward` +
      `${saved.dropped ? ` (${saved.dropped} more not listed)` : ""}`),
    table("Saved by the forward for the backward (AOTAutograd's partitioner)", saved.saved, onUserLine),
    recomputed.length ? table("Recomputed by the backward instead of saved", recomputed, onUserLine) : null);
}
