// The calls timeline (the run panel's "Calls" tab): every call the script made to a compiled
// callable, in order, with its call site and what really ran for it (compiler_core/runtime/
// calls.py): a new cache entry, an existing one whose guards passed, or no compiled code and
// why (Dynamo's recompile limit, a skipped frame, a stance). Clicking a call shows its entry in
// the panes; its line link jumps the editor to the call site. Above the calls, each compiled
// callable whose torch.compile call set arguments of its own, and the page options they beat.

import { h, clear, lineLink } from "./dom.js";

const OUTCOME = {
  compile: "compiled a new cache entry, which ran",
  recompile: "guards of the existing entries failed: compiled another, which ran",
  hit: "served by an existing cache entry (its guards passed)",
  eager: "no compiled code ran for this frame: it ran eagerly",
  error: "the call raised an exception",
};

const limitText = (limit) => `torch._dynamo.config.${limit?.name ?? "recompile_limit"} (${limit?.value ?? "?"})`;

// Why an eager call ran no compiled code: [short tag, the whole story].
const EAGER = {
  recompile_limit: (call) => [`${call.limit?.name ?? "recompile limit"} (${call.limit?.value ?? "?"}) hit`,
    `Dynamo hit ${limitText(call.limit)} for this frame: it compiles it no more, and runs it eagerly whenever no existing entry's guards pass.`],
  skipped: () => ["frame skipped", "Dynamo skipped this frame: it made no cache entry for it (e.g. no tensor ops to capture), so the frame runs eagerly."],
  run_only: () => ["run-only", "No entry's guards passed and Dynamo was told not to compile (a run-only stance such as torch.compiler.set_stance(\"eager_on_recompile\"))."],
  dynamo_off: () => ["Dynamo off", "Dynamo did not look at its cache for this call (torch.compiler.set_stance(\"force_eager\"), or a disabled region)."],
};

// [tag, title] saying why the call ran what it ran, or null for a plain compile or hit.
function why(call) {
  if (call.outcome === "eager") return EAGER[call.eager_reason]?.(call) ?? null;
  if (call.outcome !== "error") return null;
  const limit = call.limit ? `: Dynamo hit ${limitText(call.limit)} and fullgraph=True makes that an error` : "";
  return [call.error ?? "error", `The call raised ${call.error ?? "an exception"}${limit}.`];
}

const shown = (value) => (typeof value === "boolean" ? (value ? "True" : "False") : String(value));
// The page's value of an option, named where the value alone would not say which option it is
// (a mode or a backend as it is; dynamic: auto, fullgraph: False).
function pageValue(name, options) {
  const value = options?.[name];
  return typeof value === "boolean" || value === "auto" || value == null ? `${name}: ${shown(value ?? "unset")}` : value;
}

// The script's own torch.compile arguments of one compiled callable, each saying that it comes
// from the script and, where it does, that it overrides the page's option: "mode=max-autotune
// (script), overrides the page's default"; null when the call set none.
export function ownArguments(callable, options) {
  const own = Object.entries(callable?.arguments ?? {});
  if (!own.length) return null;
  const overrides = new Set(callable.overrides ?? []);
  return own.map(([name, value]) => `${name}=${shown(value)} (script)` +
    (overrides.has(name) ? `, overrides the page's ${pageValue(name, options)}` : "")).join("; ");
}

// "this compile: mode=max-autotune (script), overrides the page's default" for a compile made
// by a callable whose torch.compile call set arguments of its own; else null.
export function compileArguments(result, compileId) {
  const callable = (result?.compiled_callables ?? []).find((c) => c.compile_ids?.includes(compileId));
  const text = ownArguments(callable, result?.options);
  return text ? `this compile: ${text}` : null;
}

// The compiled graphs the script's calls of callable `index` with these arguments (described as
// the calls have them) ran: each call's cache entries, its own frame's first, then the others it
// ran (the resume functions after a graph break), in order.
export function graphsRun(result, index, args) {
  const same = (call) => call.callable === index &&
    Object.values(call.arguments ?? {}).join("|") === args.join("|");
  return [...new Set((result?.calls ?? []).filter(same)
    .flatMap((call) => (call.entries?.length ? call.entries : [call.compile_id])).filter(Boolean))];
}

function callableLine(callable, options, onLine) {
  const text = ownArguments(callable, options);
  if (!text) return null;
  return h("li", { class: `compiled-callable${callable.overrides?.length ? " overrides" : ""}` },
    h("code", {}, callable.name), callable.line ? [" ", lineLink(callable.line, onLine)] : "", `: ${text}`);
}

export function renderCalls(panel, result, { onCompile, onLine }) {
  const calls = result?.calls ?? [];
  if (!calls.length) {
    clear(panel, h("p", { class: "empty" }, result
      ? "The script called no compiled callable." : "Each call of a compiled callable appears here, in order."));
    return;
  }
  const own = (result.compiled_callables ?? []).map((c) => callableLine(c, result.options, onLine)).filter(Boolean);
  clear(panel, own.length ? h("ul", { class: "compiled-callables" }, own) : null,
    h("ol", { class: "calls" }, calls.map((call, i) => {
      const others = call.entries.filter((id) => id !== call.compile_id);
      const [tag, story] = why(call) ?? [null, null];
      const entry = call.outcome === "hit" ? "entry " : call.outcome === "eager" ? "attempt " : "";
      return h("li", { class: `call ${call.outcome}`, dataset: { call: i, compile: call.compile_id ?? "" },
                       title: `${OUTCOME[call.outcome] ?? call.outcome}${story ? `\n${story}` : ""}${call.entries.length ? `\nentries that ran: ${call.entries.join(", ")}` : ""}`,
                       onclick: (e) => { if (call.compile_id && !e.target.closest(".line-link")) onCompile(call.compile_id); } },
        h("span", { class: "call-index" }, `#${i + 1}`),
        call.line ? lineLink(call.line, onLine) : h("span", {}, "—"),
        h("code", { class: "call-name" }, `${call.name ?? "?"}(…)`),
        h("span", { class: `outcome ${call.outcome}` }, call.outcome),
        tag ? h("span", { class: "call-why" }, tag) : null,
        call.compile_id ? h("button", { class: "compile-id", title: "Show this entry in every pane" },
          `${entry}${call.compile_id}`) : null,
        others.length ? h("small", { class: "call-entries" }, ` + ${others.join(", ")}`) : null,
        call.reason ? h("div", { class: "call-reason", title: call.reason }, call.summary ?? call.reason) : null);
    })));
}
