// The programs a pane can show: the run's compiles, then what torch.export and torch.jit made
// (result.exports, result.torchscript), shown like compiles: an id, a label and stages.

import { frameLabel } from "./runpanel.js";
import { stageList } from "./stages.js";

export function pickable(result) {
  const programs = [
    ...(result?.exports ?? []).map((p) => ({ ...p, label: `export @ line ${p.line ?? "?"}` })),
    ...(result?.torchscript ?? []).map((p) => ({ ...p, label: `jit.${p.kind} @ line ${p.line ?? "?"}` })),
  ].map((p) => ({ ...p, program: true }));
  return [...(result?.compiles ?? []), ...programs];
}

export function entryLabel(entry, userFile) {
  return entry.label ?? `${entry.id} ${frameLabel(entry, userFile)}`;
}

// A program has its own stages: a pane set to a compile's stage shows the program's first (in
// the catalogue's order: a stored result's keys may come back sorted).
export function programStage(entry, stage) {
  if (!entry?.program || entry.stages[stage]) return stage;
  return stageList(entry).find(([name]) => entry.stages[name])?.[0] ?? stage;
}
