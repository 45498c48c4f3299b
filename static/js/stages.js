// The stages, from the engine's catalogue (in its order: name, label, title, language, whether
// an FX graph, the result's field holding them, the page view and panel that show them). A
// compile's stages come built by the server; the artifact of the field "timings" is made here
// from the whole run's measured timings. Stages the engine adds later show up by title.

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

// What a `stage_errors` entry says failed: its `step` (a result stored before `step` names it
// `stage` only).
export const failedStep = (entry) => entry.step ?? entry.stage;

// Why this compile has no such stage, where it could not be made: its `stage_errors` entry
// ({message: the error, reason: why in words, where known}; a job's step is named after the
// stage it makes, a failed extraction names the stages it would have made in `stages`), else
// null.
export function stageError(stage, compile, result) {
  if (!compile) return null;
  return (result?.stage_errors ?? []).find((e) => e.compile_id === compile.id &&
    (failedStep(e) === stage || e.stages?.includes(stage))) ?? null;
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
  return compile?.stages?.[stage] ?? null;
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
// The first stage that a view shows (views/index.js KERNEL_VIEW's for a graph node's kernel).
export const stageShownBy = (view) => [...stages.values()].find((s) => s.view === view)?.name ?? null;

export function filename(artifact) {
  const id = String(artifact.compile_id ?? "run").replace("/", "_");
  return `${artifact.stage}_${id}.${EXTENSION[artifact.language] ?? "txt"}`;
}

// Copy and Save give the timings as the engine wrote them.
function timingsArtifact({ name, title, language }, result) {
  return { stage: name, compile_id: null, language, src_lines: [], sections: [], title,
           text: JSON.stringify(result.timings, null, 1) };
}
