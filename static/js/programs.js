// The programs a pane can show: the run's compiles, then what torch.export and torch.jit made
// (result.exports, result.torchscript), shown like compiles: an id, a label and stages. With a
// second stored result to compare with (`other`: {result, key}), its programs follow, their ids
// prefixed "B " and labelled with its environment; `entry.of` is that entry as its result has it.

import { environmentLabel } from "./environments.js";
import { frameLabel } from "./runpanel.js";
import { stageList } from "./stages.js";

export function pickable(result, other = null) {
  const own = programsOf(result);
  if (!other) return own;
  const where = other.result.environment?.torch ? ` · ${environmentLabel(other.result.environment)}` : "";
  return [...own, ...programsOf(other.result).map((entry) => ({
    ...entry, id: `B ${entry.id}`, label: `B ${entryLabel(entry, other.result.user_file)}${where}`, of: entry }))];
}

function programsOf(result) {
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
