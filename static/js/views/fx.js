// An FX graph: its code, or drawn (graph.js).

import { renderGraph } from "../graph.js";
import { showText } from "./text.js";

export const fxView = {
  modes: ["text", "graph"],
  tabs: () => [["text", "Code"], ["graph", "Graph"]],
  render(pane, ctx, mode) {
    if (mode !== "graph") return showText(pane, ctx);
    const { owner } = pane;
    renderGraph(pane.body, { key: ctx.key, compileId: ctx.compile.id, stage: ctx.stage,
                             collapse: pane.state.collapse ?? "auto", dark: owner.dark,
                             onUserLine: owner.onUserLine,
                             onCollapse: (collapse) => pane.choose({ collapse }),
                             onKernel: (name) => owner.openKernel(name, pane) });
  },
};
