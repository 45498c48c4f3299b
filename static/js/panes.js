// Side-by-side panes: each shows one stage of one compile through the stage's view (the
// catalogue names it; views/*.js render it). Choices persist in settings.

import { h, clear, copyText, download } from "./dom.js";
import { markLines, scrollToLine, setTheme } from "./editor.js";
import { selectKernel } from "./graph.js";
import { applyDiffs, compareWithPrevious, diffSelect, followPartner, previousOf, renderDiffSelect } from "./compare.js";
import { kernelKeyOf, linesOfKey, linesOfUsers, userLinesOf } from "./linking.js";
import { StageTexts } from "./stagetexts.js";
import { errorStrip, noCompile } from "./states.js";
import { entryLabel, pickable, programStage } from "./programs.js";
import { artifactFor, filename, leftOut, optionOf, resolveStage, shownStage, stageError, stageLabel, stageMenu, stageShownBy, panelOf, viewOf } from "./stages.js";
import { KERNEL_VIEW, panelNamed, viewNamed } from "./views/index.js";
import { DEFAULT_STAGES } from "./settings.js";

export class Panes {
  // `store`: the page's settings (store.js), the panes' choices among them.
  constructor(root, store, { onUserLine, onTexts, optionLabel, onRunWith }) {
    this.root = root;
    this.store = store;
    this.settings = store.state;
    this.onUserLine = onUserLine; // a pane line or graph node was clicked: its user line
    this.optionLabel = optionLabel; // a run option's name -> its label in the toolbar
    this.onRunWith = onRunWith; // compile again with this run option on
    this.result = null;
    this.key = null;
    this.other = null; // {result, key}: a stored result to compare with (its entries are "B ...")
    this.focus = new Set();
    this.link = null; // {key, user, pane}: a pane line was clicked; others show its kernel line
    // A stage's text arrived: show it, and let the editor colour the lines it came from.
    this.texts = new StageTexts(() => { this.render(); onTexts?.(); });
    this.dark = this.settings.theme === "dark";
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
    this.store.set({ paneCount: count });
    this.build();
  }

  // `where` ({handle} or {key}) serves the texts of an indexed result (stagetexts.js).
  setResult(result, key, where = null) {
    this.result = result;
    this.key = key;
    this.texts.setSource(where);
    this.render();
  }

  // Another stored result whose compiles the panes may show beside this run's; null: none.
  setOther(other) {
    this.other = other;
    this.render();
  }

  // No pane diffed with another: the code changed, and a diff would compare other code's stages.
  clearDiffs() {
    this.settings.panes.forEach((_, i) => this.store.setPane(i, { diff: null }));
    this.render();
  }

  // A layout's panes (layout.js), each {compile, stage?, view, diff}; their count with them.
  setLayout(states) {
    states.forEach((state, i) => this.store.setPane(i, state));
    if (states.length !== this.settings.paneCount) return this.setCount(states.length);
    this.render();
  }

  showCompile(id) {
    for (const pane of this.panes) this.store.setPane(pane.index, { compile: id });
    this.render();
  }

  focusUserLine(line) {
    if (this.link?.user !== line) this.link = null; // the editor's cursor moved elsewhere
    this.focus = new Set(line ? [line] : []);
    for (const pane of this.panes) pane.applyMarks(true);
  }

  // A line of a pane was clicked: its user line is focused (and selected in the editor), and
  // the other panes scroll to their lines of the same kernel source line (TTIR <-> PTX <-> SASS).
  selectPaneLine(pane, line) {
    const user = userLinesOf(pane.artifact, line)[0] ?? null;
    this.link = { key: kernelKeyOf(pane.artifact, line), user, pane };
    this.focus = new Set(user ? [user] : []);
    const { key, entry } = pane.origin(pane.compile());
    if (this.link.key && entry) selectKernel(key, entry.id, this.link.key.replace(/:\d+$/, "")); // graphs mark its nodes
    for (const other of this.panes) other.applyMarks(other !== pane);
    if (user) this.onUserLine(user);
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
    applyDiffs(this);
  }

  // This compile beside the one it replaced (or `previous`), diffed in the first two panes.
  compare(id, stage, previous) {
    compareWithPrevious(this, id, stage, previous);
  }

  // A graph node's kernel: the stage that lists kernels in the next pane (the same one when
  // alone), scrolled to the kernel's header (its list's line).
  openKernel(name, from) {
    const target = this.panes.length > 1 ? this.panes[(this.panes.indexOf(from) + 1) % this.panes.length] : from;
    target.choose({ stage: stageShownBy(KERNEL_VIEW) });
    const line = target.artifact?.kernels?.find((kernel) => kernel.name === name)?.line;
    if (target.viewer && line) scrollToLine(target.viewer, line);
    target.el.dataset.kernel = name;
  }

  // The panes as shown (a share link's layout): each with the stage it shows, not one it is set
  // to that its compile lacks.
  shownLayout() {
    return this.panes.map(({ state: { compile, view, diff }, shown }) => ({ compile, stage: shown, view, diff }));
  }

  // User lines shown in any text pane, so the editor can colour the same lines.
  userLines() {
    const lines = new Set();
    for (const pane of this.panes) {
      if (!pane.viewer || !pane.artifact) continue;
      pane.artifact.src_lines.forEach((l) => l && lines.add(l));
      Object.values(pane.artifact.src_more ?? {}).forEach((more) => more.forEach((l) => lines.add(l)));
    }
    return lines;
  }
}

class Pane {
  constructor(owner, index) {
    this.owner = owner;
    this.index = index;
    this.state = owner.settings.panes[index];
    this.compileSelect = h("select", { class: "pane-compile", "aria-label": "Compile",
                                       onchange: () => this.choose({ compile: this.compileSelect.value }) });
    this.stageSelect = h("select", { class: "pane-stage", "aria-label": "Stage",
                                     onchange: () => this.choose({ stage: this.stageSelect.value }) });
    this.viewButtons = h("div", { class: "segmented", role: "group", "aria-label": "View" });
    this.diffSelect = diffSelect(owner, this);
    this.diffInfo = h("span", { class: "pane-diff-info" });
    this.compareButton = h("button", { class: "compare", hidden: true,
                                       onclick: () => owner.compare(this.compile().id, this.el.dataset.stage) });
    this.note = h("div", { class: "pane-note" });
    this.errorStrip = h("div", { class: "pane-error-strip" });
    this.body = h("div", { class: "pane-body" });
    this.el = h("section", { class: "pane", dataset: { index } },
      h("header", { class: "pane-head" },
        h("div", { class: "pane-pick" }, this.compileSelect, this.stageSelect),
        h("div", { class: "pane-tools" }, this.viewButtons, this.compareButton, this.diffSelect,
        this.diffInfo, h("span", { class: "spacer" }),
        h("div", { class: "pane-actions" },
          h("button", { class: "icon copy", title: "Copy this stage's text", onclick: () => this.copy() }, "Copy"),
          h("button", { class: "icon download", title: "Download this stage's text",
                        onclick: () => this.download() }, "Save")))),
      this.note, this.errorStrip, this.body);
    this.renderedKey = null;
  }

  choose(change) {
    followPartner(this.owner, this, change);
    this.owner.store.setPane(this.index, change.stage ? { ...change, view: null } : change);
    this.owner.render();
  }

  compile() {
    const compiles = pickable(this.owner.result, this.owner.other);
    return compiles.find((c) => c.id === this.state.compile) ?? compiles[0] ?? null;
  }

  // The result (and its key) the pane's entry comes from: this run's, or the compared one's,
  // and the entry as that result has it (its own id).
  origin(picked) {
    return picked?.of ? { result: this.owner.other.result, key: this.owner.other.key, entry: picked.of }
      : { result: this.owner.result, key: this.owner.key, entry: picked };
  }

  render() {
    const picked = this.compile();
    const { result, key: resultKey, entry: indexed } = this.origin(picked);
    const wanted = resolveStage(indexed, programStage(indexed, this.state.stage));
    const stage = shownStage(indexed, wanted, result, this.fallbacks());
    this.shown = stage;
    const compile = this.owner.texts.complete(indexed, stage, result); // null: its text is on its way
    const failed = this.owner.texts.failure(indexed, stage, result);
    const loading = compile === null && !failed;
    this.artifact = compile ? artifactFor(compile, stage, result) : null;
    const shows = viewNamed(viewOf(stage));
    const views = shows.tabs(this.artifact);
    const view = views.some(([v]) => v === this.state.view) ? this.state.view : views[0][0];
    this.renderSelects(picked, stage, result);
    this.renderViews(views, view);
    // "Waiting for ..." and "Measuring ..." are replaced when the job ends, even with nothing new.
    const waiting = result?.partial && (!this.artifact || shows.run);
    const key = [resultKey, waiting, loading, failed, result?.error?.type, picked?.id, stage, view,
                 this.artifact?.text.length, this.owner.dark, this.state.collapse,
                 this.owner.settings.present].join("|");
    if (key === this.renderedKey) return;
    this.renderedKey = key;
    this.viewer?.destroy();
    this.viewer = null;
    this.failedShown = false;
    this.renderNote(stage);
    const above = panelNamed(panelOf(stage))?.above?.(indexed);
    if (above) this.note.append(above);
    clear(this.errorStrip, picked ? errorStrip(result, this.owner.onUserLine) : null);
    clear(this.body);
    this.body.className = `pane-body ${view}`;
    delete this.body.dataset.ready;
    this.el.dataset.stage = stage;
    this.el.dataset.view = view;
    if (!result) {
      this.body.append(h("p", { class: "empty" }, "Compile a script (Ctrl+Enter) to see this stage."));
    } else if (!picked && !shows.run) {
      this.body.append(noCompile(result, this.owner.onUserLine));
    } else if (failed) {
      this.body.append(h("p", { class: "empty" }, `Could not load ${stageLabel(stage, indexed)}: ${failed}. `,
        h("button", { onclick: () => this.owner.texts.retry() }, "Try again")));
    } else if (loading) {
      this.body.append(h("p", { class: "empty" }, `Loading ${stageLabel(stage, indexed)} ...`));
    } else if (shows.run) {
      shows.render(this, { result }, view);
    } else if (!this.artifact) {
      this.body.append(this.absentNote(stage, compile, result));
    } else {
      shows.render(this, { artifact: this.artifact, result, compile, stage, key: resultKey }, view);
    }
  }

  // The panel the catalogue puts beside this stage's text (null: none, or nothing to say).
  panel(compile, stage) {
    return panelNamed(panelOf(stage))?.beside?.(compile, this.owner.onUserLine) ?? null;
  }

  // Stages to show where the one this pane is set to is absent: its own default first.
  fallbacks() {
    return [...DEFAULT_STAGES.slice(this.index), ...DEFAULT_STAGES.slice(0, this.index)];
  }

  // `picked`: the entry as the compile menu lists it; `result`: the result it comes from.
  renderSelects(picked, stage, result) {
    const compiles = pickable(this.owner.result, this.owner.other);
    clear(this.compileSelect, compiles.length ? compiles.map((c) =>
      h("option", { value: c.id, selected: c.id === picked?.id }, entryLabel(c, this.owner.result?.user_file))) : h("option", {}, "—"));
    this.compileSelect.title = picked ? entryLabel(picked, this.owner.result?.user_file) : ""; // a narrow menu cuts it
    const compile = this.origin(picked).entry;
    renderDiffSelect(this.owner, this);
    const previous = picked?.of ? null : previousOf(result, compile?.id); // the button's ids are this run's
    this.compareButton.hidden = !previous;
    this.compareButton.textContent = `⇆ vs ${previous}`;
    this.compareButton.title = `Diff this stage with compile ${previous}, the cache entry this compile was added beside after its guards failed`;
    clear(this.stageSelect, stageMenu(compile, result, stage).map(([name, label]) => {
      const present = !result || artifactFor(compile, name, result);
      const why = leftOut(name, compile, result) ? "off" : stageError(name, compile, result) ? "failed" : "none";
      return h("option", { value: name, selected: name === stage, class: present ? "" : "absent" },
        present ? label : `${label} (${why})`);
    }));
  }

  // Why the pane has no text: a stage that could not be made says why (the error folded below:
  // torchbolt's reader's for a failed extraction, else PyTorch's); a stage that a run option left
  // out offers to compile again with it.
  absentNote(stage, compile, result) {
    const label = stageLabel(stage, compile);
    if (result.partial) return h("p", { class: "empty" }, `Waiting for ${label} ...`);
    const absent = `${compile ? `Compile ${compile.id}` : "This run"} has no ${label} stage`;
    const failed = stageError(stage, compile, result);
    if (failed) {
      return h("div", { class: "empty stage-failed" }, h("p", {}, `${absent}: ${failed.reason ?? failed.message}`),
        failed.reason ? h("details", {}, h("summary", {}, failed.stages ? "torchbolt's error" : "PyTorch's error"),
          h("pre", { class: "traceback" }, failed.message)) : null);
    }
    if (!leftOut(stage, compile, result)) return h("p", { class: "empty" }, `${absent}.`);
    const option = optionOf(stage);
    return h("p", { class: "empty" }, `${absent}: the '${this.owner.optionLabel(option)}' box was off ` +
      "for this run. ", h("button", { class: "run-with", onclick: () => this.owner.onRunWith(option) },
      "Compile again with it on"));
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
    const focused = linesOfUsers(this.artifact, this.owner.focus);
    const linked = linesOfKey(this.artifact, this.owner.link?.key);
    const colors = new Map();
    this.artifact.src_lines.forEach((user, i) => {
      if (user && (this.owner.settings.colorLines || focused.has(i + 1))) colors.set(i + 1, user);
    });
    markLines(this.viewer, colors, focused, linked);
    const target = Math.min(...(linked.size ? linked : focused));
    if (scroll && Number.isFinite(target)) scrollToLine(this.viewer, target);
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
