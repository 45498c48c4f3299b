// The calls timeline (the run panel's "Calls" tab): every call the script made to a compiled
// callable, in order, with its call site, what Dynamo's cache did (compile, recompile, hit) and
// the cache entry that ran. Clicking a call shows that entry in the panes; its line link jumps
// the editor to the call site.

import { h, clear, lineLink } from "./dom.js";

const OUTCOME = {
  compile: "compiled a new cache entry",
  recompile: "guards of the existing entries failed: compiled another",
  hit: "served by an existing cache entry (its guards passed)",
  eager: "no cache entry ran (Dynamo skipped the frame)",
};

export function renderCalls(panel, result, { onCompile, onLine }) {
  const calls = result?.calls ?? [];
  if (!calls.length) {
    clear(panel, h("p", { class: "empty" }, result
      ? "The script called no compiled callable." : "Each call of a compiled callable appears here, in order."));
    return;
  }
  clear(panel, h("ol", { class: "calls" }, calls.map((call, i) => {
    const others = call.entries.filter((id) => id !== call.compile_id);
    return h("li", { class: `call ${call.outcome}`, dataset: { call: i, compile: call.compile_id ?? "" },
                     title: `${OUTCOME[call.outcome]}${call.entries.length ? `\nentries that ran: ${call.entries.join(", ")}` : ""}`,
                     onclick: (e) => { if (call.compile_id && !e.target.closest(".line-link")) onCompile(call.compile_id); } },
      h("span", { class: "call-index" }, `#${i + 1}`),
      call.line ? lineLink(call.line, onLine) : h("span", {}, "—"),
      h("code", { class: "call-name" }, `${call.name ?? "?"}(…)`),
      h("span", { class: `outcome ${call.outcome}` }, call.outcome),
      call.compile_id ? h("button", { class: "compile-id", title: "Show this entry in every pane" }, call.compile_id) : null,
      others.length ? h("small", { class: "call-entries" }, ` + ${others.join(", ")}`) : null,
      call.reason ? h("div", { class: "call-reason", title: call.reason }, call.summary ?? call.reason) : null);
  })));
}
