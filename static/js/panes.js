// Side-by-side panes: each shows one stage of one compile, as text (highlighted, numbered,
// coloured by source line), as a graph, or as grouped guards. Choices persist in settings.

import { h, clear, copyText, download } from "./dom.js";
import { createViewer, markLines, scrollToLine, setTheme } from "./editor.js";
import { renderGraph } from "./graph.js";
import { renderGuards } from "./guards.js";
import { frameLabel } from "./runpanel.js";
import { StageTexts } from "./stagetexts.js";
import { renderTimings } from "./timings.js";
import { artifactFor, filename, resolveStage, stageLabel, stageMenu, viewsFor } from "./stages.js";

export class Panes {
  constructor(root, settings, { onUserLine, onChange, onTexts }) {
    this.root = root;
    this.settings = settings;
    this.onUserLine = onUserLine; // a pane line or graph node was clicked: its user line
    this.onChange = onChange; // choices changed: persist them
    this.result = null;
    this.key = null;
    this.focus = new Set();
    // A stage's text arrived: show it, and let the editor colour the lines it came from.
    this.texts = new StageTexts(() => { this.render(); onTexts?.(); });
    this.dark = settings.theme === "dark";
    this.panes = [];
    this.build();
  }

  build() {
    this.panes.forEach((pane) => pane.viewer?.destroy());
    this.panes = [];
    clear(this.root);
    for (let i = 0; i < this.settings.paneCount; i++) {
      const pane = new Pane(this, i);
      this.panes.push(pane);
      this.root.append(pane.el);
    }
    this.root.dataset.count = this.settings.paneCount;
    this.render();
  }

  setCount(count) {
    this.settings.paneCount = count;
    this.onChange();
    this.build();
  }

  // `where` ({job} or {key}) serves the texts of an indexed result (stagetexts.js).
  setResult(result, key, where = null) {
    this.result = result;
    this.key = key;
    this.texts.setSource(where);
    this.render();
  }

  showCompile(id) {
    for (const pane of this.panes) pane.state.compile = id;
    this.onChange();
    this.render();
  }

  focusUserLine(line) {
    this.focus = new Set(line ? [line] : []);
    for (const pane of this.panes) pane.applyMarks(true);
  }

  setTheme(dark) {
    this.dark = dark;
    for (const pane of this.panes) pane.applyTheme();
  }

  recolor() {
    for (const pane of this.panes) pane.applyMarks(false);
  }

  render() {
    for (const pane of this.panes) pane.render();
  }

  // User lines shown in any text pane, so the editor can colour the same lines.
  userLines() {
    const lines = new Set();
    for (const pane of this.panes) {
      if (pane.viewer && pane.artifact) pane.artifact.src_lines.forEach((l) => l && lines.add(l));
    }
    return lines;
  }
}

class Pane {
  constructor(owner, index) {
    this.owner = owner;
    this.state = owner.settings.panes[index];
    this.compileSelect = h("select", { class: "pane-compile", "aria-label": "Compile",
                                       onchange: () => this.choose({ compile: this.compileSelect.value }) });
    this.stageSelect = h("select", { class: "pane-stage", "aria-label": "Stage",
                                     onchange: () => this.choose({ stage: this.stageSelect.value }) });
    this.viewButtons = h("div", { class: "segmented", role: "group", "aria-label": "View" });
    this.note = h("div", { class: "pane-note" });
    this.body = h("div", { class: "pane-body" });
    this.el = h("section", { class: "pane", dataset: { index } },
      h("header", { class: "pane-head" },
        h("div", { class: "pane-pick" }, this.compileSelect, this.stageSelect),
        h("div", { class: "pane-tools" }, this.viewButtons, h("span", { class: "spacer" }),
        h("button", { class: "icon copy", title: "Copy this stage's text", onclick: () => this.copy() }, "Copy"),
        h("button", { class: "icon download", title: "Download this stage's text",
                      onclick: () => this.download() }, "Save"))),
      this.note, this.body);
    this.renderedKey = null;
  }

  choose(change) {
    Object.assign(this.state, change);
    if (change.stage) this.state.view = null;
    this.owner.onChange();
    this.render();
  }

  compile() {
    const compiles = this.owner.result?.compiles ?? [];
    return compiles.find((c) => c.id === this.state.compile) ?? compiles[0] ?? null;
  }

  render() {
    const indexed = this.compile();
    const stage = resolveStage(indexed, this.state.stage);
    const compile = this.owner.texts.complete(indexed, stage); // null: its text is on its way
    const loading = compile === null;
    this.artifact = loading ? null : artifactFor(compile, stage, this.owner.result);
    const views = viewsFor(stage, this.artifact);
    const view = views.some(([v]) => v === this.state.view) ? this.state.view : views[0][0];
    this.renderSelects(indexed, stage);
    this.renderViews(views, view);
    // "Waiting for ..." and "Measuring ..." are replaced when the job ends, even with nothing new.
    const waiting = this.owner.result?.partial && (!this.artifact || view === "timings");
    const key = [this.owner.key, waiting, loading, indexed?.id, stage, view, this.artifact?.text.length,
                 this.owner.dark, this.state.collapse].join("|");
    if (key === this.renderedKey) return;
    this.renderedKey = key;
    this.viewer?.destroy();
    this.viewer = null;
    this.renderNote(stage);
    clear(this.body);
    this.body.className = `pane-body ${view}`;
    delete this.body.dataset.ready;
    this.el.dataset.stage = stage;
    this.el.dataset.view = view;
    if (!this.owner.result) {
      this.body.append(h("p", { class: "empty" }, "Compile a script (Ctrl+Enter) to see this stage."));
    } else if (loading) {
      this.body.append(h("p", { class: "empty" }, `Loading ${stageLabel(stage, indexed)} ...`));
    } else if (view === "timings") {
      renderTimings(this.body, this.owner.result);
    } else if (!this.artifact) {
      const running = this.owner.result.partial;
      const label = stageLabel(stage, compile);
      this.body.append(h("p", { class: "empty" }, running ? `Waiting for ${label} ...`
        : `${compile ? `Compile ${compile.id}` : "This run"} has no ${label} stage.`));
    } else if (view === "graph") {
      renderGraph(this.body, { key: this.owner.key, compileId: compile.id, stage,
                               collapse: this.state.collapse ?? "auto", dark: this.owner.dark,
                               onUserLine: this.owner.onUserLine,
                               onCollapse: (collapse) => this.choose({ collapse }) });
    } else if (view === "grouped") {
      this.body.append(renderGuards(this.artifact, this.owner.onUserLine));
    } else {
      const python = view === "python";
      this.viewer = createViewer(this.body, {
        text: python ? this.artifact.source : this.artifact.text,
        lang: python ? "python" : this.artifact.language,
        names: python ? null : this.artifact.names,
        onLineClick: (line) => {
          const user = this.viewer && !python ? this.artifact.src_lines[line - 1] : null;
          if (user) this.owner.onUserLine(user);
        },
      });
      this.python = python;
      this.applyTheme();
      this.applyMarks(false);
    }
  }

  renderSelects(compile, stage) {
    const compiles = this.owner.result?.compiles ?? [];
    clear(this.compileSelect, compiles.length ? compiles.map((c) =>
      h("option", { value: c.id, selected: c.id === compile?.id },
        `${c.id} ${frameLabel(c, this.owner.result?.user_file)}`)) : h("option", {}, "—"));
    const result = this.owner.result;
    clear(this.stageSelect, stageMenu(compile, result, stage).map(([name, label]) => {
      const present = !result || artifactFor(compile, name, result);
      return h("option", { value: name, selected: name === stage, class: present ? "" : "absent" },
        present ? label : `${label} (none)`);
    }));
  }

  renderViews(views, current) {
    clear(this.viewButtons, views.length < 2 ? [] : views.map(([value, label]) =>
      h("button", { class: value === current ? "on" : "", "aria-pressed": String(value === current),
                    onclick: () => this.choose({ view: value }) }, label)));
  }

  renderNote(stage) {
    const a = this.artifact;
    const parts = [];
    if (a?.title) parts.push(a.title);
    if (a?.view) parts.push("a view of the graph re-traced by torchbolt, not what Inductor ran");
    if (a?.source_note) parts.push(a.source_note);
    if (a?.sections?.length) parts.push(`sections: ${a.sections.map((s) => s.label).join(", ")}`);
    clear(this.note, parts.join(" · ") || stageLabel(stage));
  }

  applyTheme() {
    if (this.viewer) setTheme(this.viewer, this.owner.dark);
  }

  applyMarks(scroll) {
    if (!this.viewer || this.python) return;
    const colors = new Map();
    if (this.owner.settings.colorLines || this.owner.focus.size) {
      this.artifact.src_lines.forEach((user, i) => {
        if (user && (this.owner.settings.colorLines || this.owner.focus.has(user))) colors.set(i + 1, user);
      });
    }
    markLines(this.viewer, colors, this.owner.focus);
    if (scroll && this.owner.focus.size) {
      const index = this.artifact.src_lines.findIndex((l) => this.owner.focus.has(l));
      if (index >= 0) scrollToLine(this.viewer, index + 1);
    }
  }

  text() {
    if (!this.artifact) return null;
    return this.state.view === "python" && this.artifact.source ? this.artifact.source : this.artifact.text;
  }

  copy() {
    const text = this.text();
    if (text != null) copyText(text);
  }

  download() {
    const text = this.text();
    if (text != null) download(filename(this.artifact), text);
  }
}
