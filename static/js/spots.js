// The things a lesson step's text points at (lessons.py's `spots`), scrolled into view and
// outlined. Pane texts arrive after a scene is set, so `reveal` runs again on each render until
// every spot was found; the run panel gets more room (data-room on #left) when a spot in it does
// not fit.

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
    this.onShown = null;
  }

  // Show the spots `names`; `onShown` once all are in view.
  show(names, onShown) {
    for (const el of document.querySelectorAll(".lesson-spot")) el.classList.remove("lesson-spot");
    delete this.left.dataset.room;
    this.pending = [...names];
    this.onShown = onShown;
    this.reveal();
  }

  reveal() {
    const found = this.pending.map((name) => document.querySelector(SPOTS[name]));
    this.pending = this.pending.filter((_, i) => !found[i]);
    const shown = found.filter(Boolean);
    // Room first: it resizes the editor, which would move a spot scrolled to before.
    if (shown.some((el) => el.closest("#run") && !fits(el))) this.left.dataset.room = "run";
    for (const el of shown) {
      el.classList.add("lesson-spot");
      el.scrollIntoView({ block: fits(el) ? "center" : "start" });
    }
    if (!this.pending.length && this.onShown) {
      this.onShown();
      this.onShown = null;
    }
  }

  clear() {
    this.show([], null);
  }
}

// Whether the element fits in its scrolled container (a tab panel, a code view).
function fits(el) {
  const frame = el.closest(".tab-panel, .cm-scroller") ?? document.documentElement;
  return el.getBoundingClientRect().height <= frame.clientHeight;
}
