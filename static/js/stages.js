// The stages, from the engine's catalogue (in its order: name, label, title, language, whether
// an FX graph, and the result's field holding them), and the views each offers. "kernels" is
// built here from a compile's kernel list, "timings" from the whole run's measured timings.
// Stages the engine adds later show up by title.

const EXTENSION = { python: "py", cpp: "cpp", json: "json" };
// A pane asking for a stage this compile lacks shows its counterpart (training vs inference).
const COUNTERPART = { aot_forward: "aot_inference", aot_inference: "aot_forward" };

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
// run's timings), and `current` when the pane is set to one it lacks.
export function stageMenu(compile, result, current) {
  return stageList(compile).filter(([name]) =>
    !result || name === current || artifactFor(compile, name, result));
}

export function artifactFor(compile, stage, result) {
  const spec = stages.get(stage);
  if (spec?.field === "timings") return result?.timings?.length ? timingsArtifact(spec, result) : null;
  if (!compile) return null;
  if (spec?.field === "kernels") return compile.kernels?.length ? kernelsArtifact(spec, compile) : null;
  return compile.stages?.[stage] ?? null;
}

export function resolveStage(compile, stage) {
  if (artifactFor(compile, stage) || !COUNTERPART[stage]) return stage;
  return artifactFor(compile, COUNTERPART[stage]) ? COUNTERPART[stage] : stage;
}

export const isGraphStage = (stage) => Boolean(stages.get(stage)?.graph);

export function viewsFor(stage, artifact) {
  if (stages.get(stage)?.field === "timings") return [["timings", "Timings"]];
  if (stages.get(stage)?.graph) return [["text", "Code"], ["graph", "Graph"]];
  if (stage === "guards") return [["grouped", "Grouped"], ["text", "Tree"]];
  if (stage.startsWith("bytecode") && artifact?.source) return [["text", "dis"], ["python", "Python"]];
  return [["text", "Text"]];
}

export function filename(artifact) {
  const id = String(artifact.compile_id ?? "run").replace("/", "_");
  return `${artifact.stage}_${id}.${EXTENSION[artifact.language] ?? "txt"}`;
}

function kernelsArtifact({ name, title }, compile) {
  const lines = [];
  const srcLines = [];
  const allCpp = compile.kernels.every((k) => k.kind === "cpp" || k.kind === "extern");
  const comment = allCpp ? "//" : "#";
  for (const kernel of compile.kernels) {
    const header = [
      `${comment} ===== ${kernel.name} (${kernel.kind}${kernel.graph ? `, ${kernel.graph}` : ""}) =====`,
      kernel.nodes?.length ? `${comment} nodes: ${kernel.nodes.join(", ")}` : null,
      kernel.lines?.length ? `${comment} user lines: ${kernel.lines.join(", ")}` : null,
    ].filter(Boolean);
    const body = (kernel.source || `${comment} (library call, no generated source)`).split("\n");
    for (const line of [...header, ...body, ""]) {
      lines.push(line);
      srcLines.push(kernel.lines?.length === 1 ? kernel.lines[0] : null);
    }
  }
  return { stage: name, compile_id: compile.id, title,
           language: allCpp ? "cpp" : "python", text: lines.join("\n"), src_lines: srcLines,
           sections: [] };
}

// Copy and Save give the timings as the engine wrote them.
function timingsArtifact({ name, title, language }, result) {
  return { stage: name, compile_id: null, language, src_lines: [], sections: [], title,
           text: JSON.stringify(result.timings, null, 1) };
}
