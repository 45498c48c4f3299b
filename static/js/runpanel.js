// The run panel under the editor: live progress and the compiles (one row per compile id, its
// stages filling in as events arrive, graph breaks and recompiles between the rows), the graph
// breaks explained, and the script's output and error (an engine-named kind says its meaning,
// from the catalogue's error kinds, on hover).

import { embedded } from "./api.js";
import { compileArguments, renderCalls } from "./calls.js";
import { frameLabel, isUserFrame } from "./frames.js";
import { shownPath } from "./paths.js";
import { h, clear, lineLink, linkify, safeUrl } from "./dom.js";
import { failedStep, stageLabel, stageList } from "./stages.js";
import { noBreaks, noCompile } from "./states.js";
import { whySections } from "./why.js";

export const TABS = [["compiles", "Compiles"], ["calls", "Calls"], ["breaks", "Graph breaks"], ["output", "Output"]];
const RUN = "—"; // the row of the whole run's stages (timings): events without a compile id
// "[reset N] " of a compile id PyTorch repeated after a reset (compiler_core/compile_ids.py), else "".
const numberingOf = (id) => /^\[reset \d+\] /.exec(id ?? "")?.[0] ?? "";
// The job's progress markers beside its stages (features/breaks.py and recompiles.py PROGRESS):
// a `stage` event naming a `marker` announces one (its `stage`, the same name, is kept for older
// clients); every other names a stage, one the catalogue lists or not.
const MARKERS = { graph_break: "⚠ graph break", recompile: "↻ recompile" };
const chipLabel = (event, compile) => event.marker ? MARKERS[event.marker] ?? event.marker
  : stageLabel(event.stage, compile);

export class RunPanel {
  constructor(root, store, { errorKinds, onLine, onCompile, onStage, onCompare, onStop }) {
    Object.assign(this, { root, store, onLine, onCompile, onStage, onCompare, onStop });
    this.meanings = Object.fromEntries(errorKinds.map((k) => [k.kind, k.meaning]));
    this.tabButtons = new Map();
    this.panels = new Map();
    const bar = h("div", { class: "tabs", role: "tablist" });
    for (const [name, label] of TABS) {
      const button = h("button", { role: "tab", dataset: { tab: name }, onclick: () => this.show(name) }, label);
      this.tabButtons.set(name, button);
      this.panels.set(name, h("div", { class: `tab-panel ${name}`, role: "tabpanel" }));
      bar.append(button);
    }
    // Once the script has run, the steps after it (timings, views) may be stopped: the stages
    // shown stay (main.js cancels the job, whose handle keeps what it had).
    this.badge = h("span", { class: "badge" });
    this.statusText = h("span", { class: "status-text" });
    this.stopButton = h("button", { class: "stop-run", hidden: true, onclick: () => this.onStop(),
      title: "Stop the run here: the stages shown stay; a stopped run is not stored or shared" },
    "■ Stop here, keep the stages");
    this.statusLine = h("div", { class: "run-status" }, this.badge, " ", this.statusText, " ", this.stopButton);
    clear(root, bar, this.statusLine, ...this.panels.values());
    this.reset();
    this.show(store.state.runTab);
  }

  show(name) {
    this.store.set({ runTab: name });
    for (const [tab, button] of this.tabButtons) {
      button.setAttribute("aria-selected", String(tab === name));
      this.panels.get(tab).hidden = tab !== name;
    }
    this.scrollToTop(name);
  }

  // A run's tab opens at its top the first time it is shown: a hidden panel keeps its scroll
  // offset, so the last run's Output, scrolled to its stderr, opened the next run's scrolled down.
  scrollToTop(name) {
    const panel = this.panels.get(name);
    if (panel.dataset.run === String(this.runs)) return;
    panel.dataset.run = this.runs;
    panel.scrollTop = 0;
  }

  reset() {
    this.runs = (this.runs ?? 0) + 1;
    this.scrollToTop(this.store.state.runTab);
    clearInterval(this.timer); // a run's clock stops with it
    this.stages = new Map(); // compile id -> [{stage, marker, t}]
    this.phases = []; // the engine's phase events: its long steps (the script, timings, views)
    this.then = []; // the long steps still to come, as the latest phase names them
    this.latest = null; // the latest stage event
    this.stopped = false; // stopped with "Stop here": the stages captured are kept
    this.result = null;
    this.state = { status: "idle" };
    this.render();
  }

  start() {
    this.reset();
    this.started = performance.now();
    this.state = { status: "queued" };
    clearInterval(this.timer);
    this.timer = setInterval(() => this.renderStatus(), 100);
    this.render();
  }

  status(event) {
    this.state = { ...this.state, ...event };
    this.renderStatus();
  }

  phase(event) { // from the event stream, or each poll's latest
    if (this.phases.at(-1)?.t === event.t) return;
    this.phases.push(event);
    this.then = event.then ?? [];
    this.renderStatus();
  }

  // The page said the editor is empty: what to do instead of a run.
  empty() {
    this.reset();
    this.state = { status: "empty" };
    this.renderStatus();
  }

  stage(event) {
    this.latest = event;
    const id = event.compile_id ?? RUN;
    if (!this.stages.has(id)) this.stages.set(id, []);
    this.stages.get(id).push({ stage: event.stage, marker: event.marker, t: event.t });
    this.renderCompiles();
  }

  finish(done, elapsed) {
    clearInterval(this.timer);
    this.state = { status: done.status, cached: done.cached, error: done.error, elapsed };
    this.renderStatus();
    if (!this.result) this.renderOutput(); // a refused submit: its message, not the placeholder
    if (done.error && !this.stopped) this.show(this.result?.graph_breaks?.length && !done.error.line ? "breaks" : "output");
  }

  setResult(result) {
    this.result = result;
    this.render();
  }

  render() {
    this.renderStatus();
    this.renderCompiles();
    renderCalls(this.panels.get("calls"), this.result, { onCompile: this.onCompile, onLine: this.onLine });
    this.renderBreaks();
    this.renderOutput();
  }

  renderStatus() {
    const { status, position, cached, elapsed } = this.state;
    const took = this.result?.duration_s;
    const seconds = elapsed ?? (this.started ? (performance.now() - this.started) / 1000 : 0);
    this.stopButton.hidden = status !== "running" || this.phases.length < 2; // the first: the script's
    if (cached && elapsed == null) { // opened from a share link, a report file or a trace log
      const log = this.result?.environment?.trace_log;
      this.showStatus(status, embedded ? "report" : log ? "trace log" : "shared",
        log ? `Read from the TORCH_TRACE log ${log}, no code ran`
          : `${embedded ? "A static report" : "Loaded from the store"}, not recompiled (it ran in ${took ?? "?"} s${status === "failed" ? ", ending with an error" : ""})`);
      return;
    }
    const text = {
      idle: "Press Ctrl+Enter (or Compile) to run the script under torch.compile.",
      queued: `Queued${position > 1 ? ` (position ${position})` : ""} · ${seconds.toFixed(1)} s`,
      running: `Running · ${seconds.toFixed(1)} s · ${this.doing()}`,
      empty: "The editor is empty: paste a script that calls torch.compile, or pick one under " +
        "Examples (Alt+G), then press Ctrl+Enter.",
      done: cached ? `Loaded from the store in ${seconds.toFixed(2)} s (this exact code ran before, in ${took ?? "?"} s)`
        : `Done in ${seconds.toFixed(2)} s`,
      failed: cached ? `Loaded from the store: this code ended with an error (it ran in ${took ?? "?"} s)`
        : this.state.error?.type === "Request" ? "The server did not take this run (see Output)"
        : `Finished with an error after ${seconds.toFixed(2)} s`,
    }[status];
    // A run this page cancelled ends "failed" (the job's status, kept in data-status), but its
    // badge says so, in a neutral style: the page knows it cancelled (`cancelled`, set by main).
    const cancelled = this.cancelled && status === "failed";
    const stopped = this.stopped && cancelled;
    this.showStatus(status, stopped ? "stopped" : cancelled ? "cancelled" : status,
      stopped ? `Stopped after ${seconds.toFixed(2)} s, ${this.phases.at(-1)?.step ?? "running"}: the ` +
        "stages captured until then are shown (a stopped run is not stored: compile again for all of it)"
        : cancelled ? `Cancelled after ${seconds.toFixed(2)} s` : text);
  }

  showStatus(status, badge, text) {
    this.badge.className = `badge ${["stopped", "cancelled"].includes(badge) ? "cancelled" : status}`;
    this.badge.textContent = badge;
    this.statusText.textContent = text;
    this.root.dataset.status = status;
  }

  // What the run does now: the engine's latest phase and, while the script runs, the compile its
  // latest stage came from; then the long steps still to come.
  doing() {
    const phase = this.phases.at(-1);
    const latest = this.latest?.compile_id && this.latest.t >= (phase?.t ?? 0) ? this.latest : null;
    const compiles = [...this.stages.keys()].filter((id) => id !== RUN).length;
    const counted = this.phases.length < 2 ? ` (${compiles} compile${compiles === 1 ? "" : "s"} so far)` : "";
    return [phase?.step ?? "starting", latest ? `compile ${latest.compile_id}: ${chipLabel(latest)}${counted}` : null,
    this.then.length ? `then ${this.then.join(", then ")}` : null].filter(Boolean).join(" · ");
  }

  renderCompiles() {
    const panel = this.panels.get("compiles");
    const compiles = this.result?.compiles ?? [];
    const ids = [...new Set([...compiles.map((c) => c.id), ...this.stages.keys()])];
    if (!ids.length) {
      clear(panel, this.result ? noCompile(this.result, this.onLine) : h("p", { class: "empty" },
        this.state.status === "idle" ? "Compiles appear here, one per compile id (0/0, 1/0 ...)."
          : this.state.status === "failed" ? "No result: the run ended before it started."
            : "Waiting for the first compile ..."));
      return;
    }
    const rows = [];
    for (const [i, id] of ids.entries()) {
      const compile = compiles.find((c) => c.id === id);
      const numbering = numberingOf(id);
      if (numbering && numbering !== numberingOf(ids[i - 1])) rows.push(h("div", { class: "between reset" },
        `↺ PyTorch numbered compiles again from 0/0 here (torch._dynamo.reset()); its logs and tlparse ` +
        `call these 0/0, 0/1 ... as before, and torchbolt writes them ${numbering}0/0, ${numbering}0/1 ... to keep them apart`));
      for (const r of this.result?.recompiles ?? []) {
        if (r.compile_id === id) rows.push(h("div", { class: "between recompile" }, "↻ Recompile",
          r.line ? [" at ", lineLink(r.line, this.onLine)] : "",
          r.previous ? ` (guards of ${(r.misses ?? [r]).map((m) => m.previous).join(", ")} failed)` : "", ": ",
          h("code", { title: r.detail ?? r.reason }, r.summary ?? r.reason),
          r.previous ? ["guards", "dynamo_graph"].map((stage) => h("button", { class: "chip compare",
            dataset: { stage }, title: `Diff ${r.previous} and ${id} side by side`,
            onclick: () => this.onCompare(id, stage, r.previous) }, `⇆ ${stage === "guards" ? "guards" : "graphs"}`)) : null));
      }
      rows.push(this.compileRow(id, compile));
      for (const b of this.result?.graph_breaks ?? []) {
        if (b.compile_id === id) rows.push(h("div", { class: "between break" }, "⚠ Graph break",
          b.line ? [" at ", lineLink(b.line, this.onLine)] : "", `: ${b.reason}`,
          b.resumes_in ? ` → resumes in ${b.resumes_in}` : ""));
      }
    }
    clear(panel, rows);
  }

  compileRow(id, compile) {
    const frame = compile?.frame;
    const events = this.stages.get(id) ?? [];
    const labels = Object.fromEntries(stageList(compile));
    const compileId = id === RUN ? null : id;
    const announced = events.map((e) => h("button", {
      class: e.marker ? "chip stage marker" : "chip stage",
      title: e.marker ?? `Show ${chipLabel(e, compile)} in the first pane`,
      onclick: e.marker ? null : () => this.onStage(compileId, e.stage),
    }, chipLabel(e, compile), h("small", {}, ` ${Number(e.t).toFixed(2)}s`)));
    // Stages no event announced (all of a stored result's; the Kernels stage, built with the
    // result), once the result has them: no time.
    const built = stageList(compile).filter(([stage]) => compile?.stages?.[stage]
      && !events.some((e) => !e.marker && e.stage === stage))
      .map(([stage, label]) => h("button", { class: "chip stage", title: `Show ${label} in the first pane`,
                                             onclick: () => this.onStage(id, stage) }, label));
    return h("div", { class: "compile-row", dataset: { compile: id } },
      compileId ? h("button", { class: "compile-id", title: "Show this compile in every pane",
                                onclick: () => this.onCompile(id) }, id) : h("strong", {}, "run"),
      h("span", { class: "frame", title: frame?.filename ? `${shownPath(frame.filename, this.result?.user_file)}:${frame.line}` : null },
        compileId ? frameLabel(compile, this.result?.user_file) : "after the script",
        this.frameLine(compile)),
      h("div", { class: "chips" }, announced, built),
      this.censusLine(compile, labels),
      this.argumentsLine(compileId));
  }

  // The arguments this compile's torch.compile call set itself, if any, and the page options
  // they override.
  argumentsLine(compileId) {
    const text = compileId ? compileArguments(this.result, compileId) : null;
    return text ? h("div", { class: "compile-arguments" }, text) : null;
  }

  // A frame in the user's script links its own line; one in library code (a compiled nn.Module
  // from torch) the user's line that called it; a compile of no frame (compiled autograd's graph)
  // the line whose backward() traced it.
  frameLine(compile) {
    const own = compile?.frame?.name && isUserFrame(compile, this.result?.user_file);
    const line = own ? compile.frame.line : compile?.user_line;
    return line ? [own ? " " : compile?.frame?.name ? " called at " : " traced at ", lineLink(line, this.onLine)] : "";
  }

  // The narrowing from Torch IR to ATen, Core ATen and prims: ops per graph stage.
  censusLine(compile, labels) {
    const census = compile?.census ?? {};
    // In the stages' order (a stored result's JSON comes back with its keys sorted).
    const names = [...Object.keys(labels).filter((stage) => stage in census),
      ...Object.keys(census).filter((stage) => !(stage in labels))];
    if (!names.length) return null;
    const opsets = this.result?.environment?.opsets;
    const title = "Ops: call_function, call_method and call_module nodes; distinct: their targets." +
      (opsets ? ` The installed torch has ${opsets.aten} ATen operators, ${opsets.core_aten} of them ` +
        `Core ATen, and ${opsets.prims} prims (${opsets.how}).` : "");
    return h("div", { class: "census", title }, "ops: ", names.map((name, i) => [i ? " → " : "",
      h("span", {}, `${labels[name] ?? name} ${census[name].ops}`,
        h("small", {}, ` (${census[name].distinct} distinct)`))]));
  }

  renderBreaks() {
    const breaks = this.result?.graph_breaks ?? [];
    this.tabButtons.get("breaks").textContent = `Graph breaks${breaks.length ? ` (${breaks.length})` : ""}`;
    clear(this.panels.get("breaks"), breaks.length ? breaks.map((b) => h("article", { class: "break-card" },
      h("h3", {}, "Graph break", b.line ? [" at ", lineLink(b.line, this.onLine)] : "",
        ` in ${b.compile_id}`, b.resumes_in ? ` → resumes in ${b.resumes_in}` : ""),
      h("p", { class: "reason" }, b.gb_code ? [breakLink(b), " "] : "", b.gb_type ?? b.reason),
      b.explanation ? h("p", {}, b.explanation) : null,
      b.hints?.length ? h("ul", { class: "hints" }, b.hints.map((hint) => h("li", {}, hint))) : null,
      b.full_reason ? h("details", { class: "full-reason" }, h("summary", {}, "PyTorch's full message"),
        h("pre", {}, b.full_reason)) : null,
      b.user_traceback ? h("pre", { class: "traceback" }, b.user_traceback) : null))
      : h("p", { class: "empty" }, this.result ? noBreaks(this.result)
        : "Graph breaks are explained here, and marked in the editor's gutter."),
    whySections(this.result, this.onLine));
  }

  errorBox(e) {
    return h("div", { class: `error-box ${e.type}` },
      h("strong", { title: this.meanings[e.type] }, e.type), e.line ? [" at ", lineLink(e.line, this.onLine)] : "",
      h("p", { class: "message" }, linkify(e.message)), e.traceback ? h("pre", { class: "traceback" }, e.traceback) : null);
  }

  renderOutput() {
    const r = this.result;
    const panel = this.panels.get("output");
    const tab = this.tabButtons.get("output");
    tab.textContent = r?.error ? "Output ⚠" : "Output";
    if (!r) {
      const refused = this.state.error; // the request itself failed (a 429, the network)
      clear(panel, refused ? this.errorBox(refused)
        : h("p", { class: "empty" }, "The script's error, stdout and stderr appear here."));
      return;
    }
    const e = r.error;
    clear(panel,
      e ? this.errorBox(e) : null,
      (r.notes ?? []).map((note) => h("p", { class: "note" }, note)),
      (r.stage_errors ?? []).map((s) => h("p", { class: "note" },
        `Step ${failedStep(s)}${s.compile_id ? ` of ${s.compile_id}` : ""} failed: ${s.message}`)),
      h("h4", {}, "stdout"), h("pre", { class: "stdout" }, r.stdout || "(empty)"),
      replayOutput(r.replay_output),
      r.stderr ? [h("h4", {}, "stderr"), h("pre", { class: "stderr" }, r.stderr)] : null);
  }
}

// What torchbolt's own timing replays printed (the script's callables called again to time
// them), folded below the script's output: not the script's.
function replayOutput(replay) {
  if (!replay?.lines) return null;
  const lines = `${replay.lines} line${replay.lines === 1 ? "" : "s"}`;
  const head = String(replay.head ?? "").replace(/\n$/, "");
  const shown = head ? head.split("\n").length : 0;
  return h("details", { class: "replay-output" },
    h("summary", {}, `torchbolt's timing replays printed ${lines} — not your script's output`),
    h("pre", {}, head, shown < replay.lines ? `\n… (the first ${shown} of ${lines})` : ""));
}

// PyTorch's graph-break id (GB0059) as a link to its page on the break, where it gave one.
export function breakLink(b) {
  const url = safeUrl(b.url);
  return url ? h("a", { class: "gb-code", href: url, target: "_blank", rel: "noopener noreferrer",
                        title: "PyTorch's page on this graph break" }, b.gb_code)
    : h("code", { class: "gb-code" }, b.gb_code);
}
