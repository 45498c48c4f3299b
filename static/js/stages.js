// The stages, from the engine's catalogue (in its order: name, label, title, language, whether
// an FX graph, the result's field holding them, the page view and panel that show them). The
// artifact of the field "kernels" is built here from a compile's kernel list, of "timings" from
// the whole run's measured timings. Stages the engine adds later show up by title.

import { fusionOf } from "./kernels.js";

const EXTENSION = { python: "py", cpp: "cpp", json: "json" };

let stages = new Map(); // name -> the catalogue's stage

export function configureStages(catalogue) {
  stages = new Map(catalogue.stages.map((stage) => [stage.name, stage]));
}

export function stageLabel(name, compile) {
  return stages.get(name)?.label ?? compile?.stages?.[name]?.title ?? name;
}

// [name, label] of every stage, those of this compile the catalogue does not list included.
export function stageList(compile) {
  const extra = Object.keys(compile?.stages ?? {}).filter((name) => !stages.has(name));
  return [...stages.keys(), ...extra].map((name) => [name, stageLabel(name, compile)]);
}

// The stage menu of a pane: before a result, every stage; after, those this compile has (and the
// run's timings), those a run option left out (`leftOut`) or that could not be made
// (`stageError`), and `current` when the pane is set to one it lacks.
export function stageMenu(compile, result, current) {
  return stageList(compile).filter(([name]) => !result || name === current ||
    artifactFor(compile, name, result) || leftOut(name, compile, result) ||
    stageError(name, compile, result));
}

// Why this compile has no such stage, where it could not be made: its `stage_errors` entry
// ({message: the error, reason: why in words, where known}; a failed extraction names the
// stages it would have made in `stages`), else null.
export function stageError(stage, compile, result) {
  if (!compile) return null;
  return (result?.stage_errors ?? []).find((e) => e.compile_id === compile.id &&
    (e.stage === stage || e.stages?.includes(stage))) ?? null;
}

// The run option that gives this stage (null: none), and whether this run had it off, for this
// compile: a compile's own views come only from a Dynamo graph (not an export or a TorchScript).
export const optionOf = (stage) => stages.get(stage)?.option ?? null;
export function leftOut(stage, compile, result) {
  const option = optionOf(stage);
  if (!option || result?.options?.[option] !== false) return false;
  return stages.get(stage).field !== "stages" || Boolean(compile?.stages?.dynamo_graph);
}

export function artifactFor(compile, stage, result) {
  const spec = stages.get(stage);
  if (spec?.field === "timings") return result?.timings?.length ? timingsArtifact(spec, result) : null;
  if (!compile) return null;
  if (spec?.field === "kernels") {
    return compile.kernels?.length || compile.gpu_preview?.kernels?.length ? kernelsArtifact(spec, compile, result) : null;
  }
  return compile.stages?.[stage] ?? null;
}

// A pane asking for a stage this compile lacks shows its counterpart (training vs inference).
export function resolveStage(compile, stage) {
  const counterpart = stages.get(stage)?.counterpart;
  if (artifactFor(compile, stage) || !counterpart) return stage;
  return artifactFor(compile, counterpart) ? counterpart : stage;
}

// The stage a pane shows: `wanted` where this compile has it or can say why not (a run option
// left it out, it failed, the run's timings say why they are missing), else the first of
// `fallbacks` it has, else its first stage; `wanted` while none has arrived yet ("Waiting ...").
export function shownStage(compile, wanted, result, fallbacks) {
  if (!result) return wanted;
  const has = (stage) => Boolean(artifactFor(compile, stage, result));
  if (has(wanted) || (!result.partial && (leftOut(wanted, compile, result) ||
      stageError(wanted, compile, result) || stages.get(wanted)?.field === "timings"))) return wanted;
  const candidates = [...fallbacks, ...stageList(compile).map(([name]) => name)];
  return candidates.map((stage) => resolveStage(compile, stage)).find(has) ?? wanted;
}

export const isGraphStage = (stage) => Boolean(stages.get(stage)?.graph);

// The catalogue's name of the page view of a stage (views/index.js) and of its panel (or null).
export const viewOf = (stage) => stages.get(stage)?.view ?? "text";
export const panelOf = (stage) => stages.get(stage)?.panel ?? null;
// The first stage that a view shows (the kernels' for a graph node's kernel).
export const stageShownBy = (view) => [...stages.values()].find((s) => s.view === view)?.name ?? null;

export function filename(artifact) {
  const id = String(artifact.compile_id ?? "run").replace("/", "_");
  return `${artifact.stage}_${id}.${EXTENSION[artifact.language] ?? "txt"}`;
}

// One text of the compile's kernels (with the GPU preview on, the previewed Triton kernels and
// the CUDA-side module that launches them), each kernel under a header with its nodes and user
// lines; `kernels` lists them for the pane's kernel list (jump-to lines, measured times).
function kernelsArtifact({ name, title }, compile, result) {
  const preview = compile.gpu_preview;
  const kernels = preview?.kernels?.length ? preview.kernels : compile.kernels;
  const allCpp = kernels.every((k) => k.kind === "cpp" || k.kind === "extern");
  const comment = allCpp ? "//" : "#";
  const text = [], srcLines = [], srcMore = {}, keys = [], list = [];
  const times = kernelTimes(result, compile.id);
  const push = (line, users = [], key = null) => {
    if (users.length > 1) srcMore[String(text.length)] = users.slice(1);
    text.push(line);
    srcLines.push(users[0] ?? null);
    keys.push(key);
  };
  for (const kernel of kernels) {
    list.push({ name: kernel.name, label: kernel.label ?? kernel.name, kind: kernel.kind, graph: kernel.graph,
                nodes: kernel.nodes ?? [], lines: kernel.lines ?? [], line: text.length + 1,
                fusion: preview ? null : fusionOf(compile.fusion, kernel), // the CPU run's decisions
                time: preview ? null : times.get(kernel.name) ?? null });
    const header = [
      `${comment} ===== ${kernel.name} (${kernel.kind}${kernel.graph ? `, ${kernel.graph}` : ""}) =====`,
      kernel.nodes?.length ? `${comment} nodes: ${kernel.nodes.join(", ")}` : null,
      kernel.lines?.length ? `${comment} user lines: ${kernel.lines.join(", ")}` : null,
    ].filter(Boolean);
    header.forEach((line) => push(line, kernel.lines ?? []));
    const body = (kernel.source || `${comment} (library call, no generated source)`).split("\n");
    body.forEach((line, i) => push(line, kernel.source ? userLines(kernel, i) : kernel.lines ?? [],
                                   kernel.source ? `${kernel.label ?? kernel.name}:${i + 1}` : null));
    push("");
  }
  const sections = list.map((k) => ({ label: k.label, line: k.line - 1 }));
  if (preview?.module) {
    sections.push({ label: "CUDA-side module (preview)", line: text.length });
    push(`# ===== ${preview.module.title} =====`);
    preview.module.text.split("\n").forEach((line, i) =>
      push(line, userLines(preview.module, i), preview.module.kernel_src?.[i] ?? null));
  }
  return { stage: name, compile_id: compile.id, language: allCpp ? "cpp" : "python",
           title: preview ? `${title} - preview for ${preview.device}` : title,
           text: text.join("\n"), src_lines: srcLines, src_more: srcMore, kernel_src: keys,
           sections, kernels: list };
}

// The user lines of line `i` (0-based) of a kernel's source or of an artifact.
function userLines(entry, i) {
  const first = entry.src_lines?.[i];
  return first == null ? [] : [first, ...(entry.src_more?.[String(i)] ?? [])];
}

// Measured time per call of each kernel of a compile: the profiler's rows for the callables
// whose calls ran this compile (kernel name -> {us, callable}).
function kernelTimes(result, compileId) {
  const times = new Map();
  const callables = new Set((result?.calls ?? []).filter((c) => c.compile_id === compileId
    || (c.entries ?? []).includes(compileId)).map((c) => c.callable));
  for (const entry of result?.timings ?? []) {
    if (!callables.has(entry.callable)) continue;
    for (const row of entry.kernels?.compiled ?? []) {
      if (!times.has(row.name)) times.set(row.name, { us: row.us_per_call, callable: entry.name });
    }
  }
  return times;
}

// Copy and Save give the timings as the engine wrote them.
function timingsArtifact({ name, title, language }, result) {
  return { stage: name, compile_id: null, language, src_lines: [], sections: [], title,
           text: JSON.stringify(result.timings, null, 1) };
}
