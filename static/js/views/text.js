// A stage as text: highlighted, numbered, coloured by user line; with a list beside it (the
// kernels view's) or the stage's panel (views/index.js).

import { h } from "../dom.js";
import { createViewer } from "../editor.js";

// `python`: the artifact's decompiled source instead of its text; `list`: an element shown beside.
export function showText(pane, { artifact, compile, stage }, { python = false, list = pane.panel(compile, stage) } = {}) {
  let host = pane.body;
  if (list) {
    host = h("div", { class: "kernel-code" });
    pane.body.classList.add("with-list");
    pane.body.append(list, host);
  }
  pane.viewer = createViewer(host, {
    text: python ? artifact.source : artifact.text,
    lang: python ? "python" : artifact.language,
    names: python ? null : artifact.names,
    wrap: pane.owner.settings.present, // a projector's pane is narrow: long lines wrap
    onLineClick: (line) => { if (pane.viewer && !python) pane.owner.selectPaneLine(pane, line); },
  });
  pane.python = python;
  pane.applyTheme();
  pane.applyMarks(false);
}

export const textView = {
  modes: ["text"],
  tabs: () => [["text", "Text"]],
  render: (pane, ctx) => showText(pane, ctx),
};
