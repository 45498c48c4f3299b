// The programs a pane can show: the run's compiles, then what torch.export and torch.jit made
// (result.exports, result.torchscript), shown like compiles: an id, a label and stages. With a
// second stored result to compare with (`other`: {result, key}), its programs follow, their ids
// prefixed "B " and labelled with its environment; `entry.of` is that entry as its result has it.

import { h } from "./dom.js";
import { environmentLabel } from "./environments.js";
import { frameLabel } from "./frames.js";
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
    ...(result?.exports ?? []).map((p) => ({ ...p, label: `export @ line ${p.line ?? "?"}${p.aoti ? " + AOTInductor" : ""}` })),
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

// The measured JIT vs AOT numbers of an export's AOTInductor package (entry.aoti), each with
// where it comes from; shown above the export's AOTInductor stages (their catalogue panel
// "aoti"; null without a package).
const AOT_ROWS = [
  ["compile_s", "AOT build", "aoti_compile_and_package: C++ wrapper + kernels → g++ → .so, once, ahead of time"],
  ["load_s", "AOT load", "aoti_load_package"],
  ["first_call_s", "AOT first call", "the loaded package on the export's example inputs: no compile, no Python"],
  ["jit_first_call_s", "JIT first call", "a fresh torch.compile(ep.module()), its first call: trace + compile + run"],
];

export function aotiTable(entry) {
  const aoti = entry?.aoti;
  if (!aoti) return null;
  const seconds = (value) => (value == null ? "not measured" : value < 1 ? `${(value * 1000).toFixed(1)} ms` : `${value.toFixed(2)} s`);
  const bytes = aoti.package_files.reduce((sum, file) => sum + file.bytes, 0);
  const builtBy = aoti.built_by === "script" ? `the script (line ${aoti.line ?? "?"})` : "torchbolt (option aot)";
  const compiler = aoti.compiler.path ? `${aoti.compiler.path}${aoti.compiler.version ? ` (${aoti.compiler.version})` : ""}` : "torch's default";
  return h("table", { class: "timing-table aoti-table" },
    h("caption", {}, h("strong", {}, "JIT vs AOT"), ` · package built by ${builtBy} on ${aoti.device} ` +
      `with ${compiler} · ${aoti.package_files.length} files, ${(bytes / 1024).toFixed(0)} KB`),
    h("thead", {}, h("tr", {}, h("th", {}, ""), h("th", {}, "time"), h("th", {}, "measured as"))),
    h("tbody", {}, AOT_ROWS.map(([key, label, source]) =>
      h("tr", { dataset: { key } }, h("th", {}, label), h("td", {}, seconds(aoti[key])), h("td", {}, source)))));
}
