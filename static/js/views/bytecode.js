// Bytecode: as `dis` prints it, or decompiled to Python where the engine could (its `source`).

import { showText } from "./text.js";

export const bytecodeView = {
  modes: ["text", "python"],
  tabs: (artifact) => (artifact?.source ? [["text", "dis"], ["python", "Python"]] : [["text", "Text"]]),
  render: (pane, ctx, mode) => showText(pane, ctx, { python: mode === "python" }),
};
