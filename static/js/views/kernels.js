// The generated kernels: one text, with the kernel list beside it (kernels.js).

import { scrollToLine } from "../editor.js";
import { renderKernelList } from "../kernels.js";
import { showText } from "./text.js";

export const kernelsView = {
  modes: ["text"],
  tabs: () => [["text", "Text"]],
  render(pane, ctx) {
    const list = renderKernelList(ctx.artifact.kernels, {
      onJump: (line) => pane.viewer && scrollToLine(pane.viewer, line, "start"),
      onUserLine: pane.owner.onUserLine });
    showText(pane, ctx, { list });
  },
};
