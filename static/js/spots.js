// The things a lesson step's text points at (lessons.py's `spots`), scrolled into view and
// outlined, and the code and text it is about (its `points`: a line of the editor, a pane's line
// or item), scrolled into view. Pane texts arrive after a scene is set and each arrival renders
// the panes again, so `reveal` runs on each render: until every spot was found, and for every
// point whose view is new. The run panel gets more room (data-room on #left) when a spot in it
// does not fit.

import { EditorView } from "../vendor/codemirror.js";
import { scrollToLine } from "./editor.js";

export const SPOTS = {
  graph_break: "#run .tab-panel.compiles .between.break",
  recompile: "#run .tab-panel.compiles .between.recompile",
  compile_row: "#run .tab-panel.compiles .compile-row",
  census: "#run .tab-panel.compiles .census",
  calls: "#run .tab-panel.calls .calls",
  break_card: "#run .tab-panel.breaks .break-card",
  stdout: "#run .tab-panel.output .stdout",
  stderr: "#run .tab-panel.output .stderr",
  break_mark: "#editor .cm-lint-marker-warning",
  failed_guard: "#panes .cm-line.tb-failed",
  kernel_list: "#panes .kernel-list",
  aoti_table: "#panes .aoti-table",
};

export class Spotlight {
  constructor(left) {
    this.left = left; // the editor and run panel's column
    this.pending = [];
    this.points = [];
    this.onShown = null;
  }

  // Show the spots `names` and the `points` ({text, place}); `onShown` once all are in view.
  show(names, points, onShown) {
    for (const el of document.querySelectorAll(".lesson-spot")) el.classList.remove("lesson-spot");
    delete this.left.dataset.room;
    this.pending = [...names];
    this.points = points.map((point) => ({ ...point, shownIn: null }));
    this.onShown = onShown;
    this.reveal();
  }

  reveal() {
    for (const point of this.points) showPoint(point);
    const found = this.pending.map((name) => document.querySelector(SPOTS[name]));
    this.pending = this.pending.filter((_, i) => !found[i]);
    const shown = found.filter(Boolean);
    // Room first: it resizes the editor, which would move a spot scrolled to before.
    if (shown.some((el) => el.closest("#run") && !fits(el))) this.left.dataset.room = "run";
    for (const el of shown) {
      el.classList.add("lesson-spot");
      el.scrollIntoView({ block: fits(el) ? "center" : "start" });
    }
    if (!this.pending.length && this.points.every((point) => point.shownIn) && this.onShown) {
      this.onShown();
      this.onShown = null;
    }
  }

  clear() {
    this.show([], [], null);
  }
}

// Whether the element fits in the box that scrolls it (a tab panel, a code view, a pane's note).
function fits(el) {
  let frame = el.parentElement;
  while (frame && !/auto|scroll/.test(getComputedStyle(frame).overflowY)) frame = frame.parentElement;
  return el.getBoundingClientRect().height <= (frame ?? document.documentElement).clientHeight;
}

// A point's place: the editor, or pane N's body.
const placeOf = (place) => document.querySelector(place === "editor" ? "#editor" : `.pane[data-index="${place}"] .pane-body`);

// Scrolls to the first item (outside code views) or else the first code line showing the
// point's text, once per element or code view it is shown in (a render makes new ones).
function showPoint(point) {
  const root = placeOf(point.place);
  if (!root) return;
  const item = [...root.querySelectorAll(":not(.cm-editor *)")].find((el) =>
    !el.closest(".cm-editor") && el.textContent.includes(point.text)
    && ![...el.children].some((child) => child.textContent.includes(point.text)));
  if (item) {
    if (point.shownIn === item) return;
    for (let fold = item.closest("details:not([open])"); fold; fold = fold.parentElement.closest("details:not([open])")) fold.open = true;
    item.classList.add("lesson-spot");
    item.scrollIntoView({ block: "center" });
    point.shownIn = item;
    return;
  }
  const editor = root.querySelector(".cm-editor");
  const view = editor && EditorView.findFromDOM(editor);
  if (!view || point.shownIn === view) return;
  const at = view.state.doc.toString().indexOf(point.text);
  if (at < 0) return;
  scrollToLine(view, view.state.doc.lineAt(at).number);
  point.shownIn = view;
}
