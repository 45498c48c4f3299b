// The whole run's measured timings (timings.js): shown whatever compile the pane is on.

import { renderTimings } from "../timings.js";

export const timingsView = {
  modes: ["timings"],
  run: true,
  tabs: () => [["timings", "Timings"]],
  render: (pane, { result }) => renderTimings(pane.body, result),
};
