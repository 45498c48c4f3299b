// Dynamo's guards: grouped (guards.js), or as PyTorch's tree with the guards that failed marked.

import { markRows, scrollToLine } from "../editor.js";
import { failedGuards, renderGuards } from "../guards.js";
import { showText } from "./text.js";

// The guards whose failure made Dynamo recompile (the recompile's reason names them), the
// first scrolled into view.
function markFailed(pane, { artifact, result, compile }) {
  const rows = [...failedGuards(result, compile.id).keys()]
    .map((index) => artifact.guards?.[index]?.row).filter(Boolean);
  markRows(pane.viewer, "failed", new Set(rows), "tb-failed");
  pane.failedShown = rows.length > 0;
  if (pane.failedShown) scrollToLine(pane.viewer, Math.min(...rows));
}

export const guardsView = {
  modes: ["grouped", "text"],
  tabs: () => [["grouped", "Grouped"], ["text", "Tree"]],
  render(pane, ctx, mode) {
    if (mode === "grouped") {
      pane.body.append(renderGuards(ctx.artifact, pane.owner.onUserLine, failedGuards(ctx.result, ctx.compile.id)));
      return;
    }
    showText(pane, ctx);
    markFailed(pane, ctx);
  },
};
