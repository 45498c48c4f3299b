// The generated kernels: one text, with the kernel list beside it (kernels.js).

import { scrollToLine } from "../editor.js";
import { renderKernelList } from "../kernels.js";
import { showText } from "./text.js";

// A listed kernel's fusion decisions come as indexes into its compile's fusion log.
function withDecisions(kernels, fusion) {
  const decided = (indexes) => indexes.map((i) => fusion.decisions[i]);
  return kernels.map((k) => k.fusion && fusion
    ? { ...k, fusion: { fused: decided(k.fusion.fused), refused: decided(k.fusion.refused) } }
    : { ...k, fusion: null });
}

export const kernelsView = {
  modes: ["text"],
  tabs: () => [["text", "Text"]],
  render(pane, ctx) {
    const list = renderKernelList(withDecisions(ctx.artifact.kernels, ctx.compile.fusion), {
      onJump: (line) => pane.viewer && scrollToLine(pane.viewer, line, "start"),
      onUserLine: pane.owner.onUserLine });
    showText(pane, ctx, { list });
  },
};
