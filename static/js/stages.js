// Stage names (the engine's, in its order, plus "kernels", built here from a compile's kernel
// list, and "timings", the whole run's measured timings), their labels and the views each offers.
// Stages the engine adds later show up by title.

const LABELS = [
  ["bytecode_original", "Bytecode: original"],
  ["bytecode_transformed", "Bytecode: transformed"],
  ["dynamo_graph", "Dynamo graph (Torch IR)"],
  ["guards", "Guards"],
  ["aot_joint", "AOT joint graph"],
  ["aot_forward", "AOT forward (ATen)"],
  ["aot_backward", "AOT backward (ATen)"],
  ["aot_inference", "AOT inference (ATen)"],
  ["core_aten", "Core ATen (view)"],
  ["prims", "Prims (view)"],
  ["post_grad_graph", "Inductor post-grad graph"],
  ["ir_pre_fusion", "Loop IR before fusion"],
  ["ir_post_fusion", "Loop IR after fusion"],
  ["output_code", "Generated code"],
  ["kernels", "Kernels"],
  ["timings", "Timings (measured)"],
  ["metrics", "Compilation metrics"],
];
const STAGE_LABEL = Object.fromEntries(LABELS);
const EXTENSION = { python: "py", cpp: "cpp", json: "json" };
// A pane asking for a stage this compile lacks shows its counterpart (training vs inference).
const COUNTERPART = { aot_forward: "aot_inference", aot_inference: "aot_forward" };

let graphStages = new Set();
let stageOrder = [];

export function configureStages({ graph_stages: graphNames, stage_names: names }) {
  graphStages = new Set(graphNames);
  const at = names.indexOf("output_code") + 1 || names.length;
  stageOrder = [...names.slice(0, at), "kernels", "timings", ...names.slice(at)];
}

export function stageLabel(name, compile) {
  return STAGE_LABEL[name] ?? compile?.stages?.[name]?.title ?? name;
}

// [name, label] of every stage, those of this compile the engine does not list included.
export function stageList(compile) {
  const extra = Object.keys(compile?.stages ?? {}).filter((name) => !stageOrder.includes(name));
  return [...stageOrder, ...extra].map((name) => [name, stageLabel(name, compile)]);
}

export function artifactFor(compile, stage, result) {
  if (stage === "timings") return result?.timings?.length ? timingsArtifact(result) : null;
  if (!compile) return null;
  if (stage === "kernels") return compile.kernels?.length ? kernelsArtifact(compile) : null;
  return compile.stages?.[stage] ?? null;
}

export function resolveStage(compile, stage) {
  if (artifactFor(compile, stage) || !COUNTERPART[stage]) return stage;
  return artifactFor(compile, COUNTERPART[stage]) ? COUNTERPART[stage] : stage;
}

export function viewsFor(stage, artifact) {
  if (stage === "timings") return [["timings", "Timings"]];
  if (graphStages.has(stage)) return [["text", "Code"], ["graph", "Graph"]];
  if (stage === "guards") return [["grouped", "Grouped"], ["text", "Tree"]];
  if (stage.startsWith("bytecode") && artifact?.source) return [["text", "dis"], ["python", "Python"]];
  return [["text", "Text"]];
}

export function filename(artifact) {
  const id = String(artifact.compile_id ?? "run").replace("/", "_");
  return `${artifact.stage}_${id}.${EXTENSION[artifact.language] ?? "txt"}`;
}

function kernelsArtifact(compile) {
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
  return { stage: "kernels", compile_id: compile.id, title: "Generated kernels",
           language: allCpp ? "cpp" : "python", text: lines.join("\n"), src_lines: srcLines,
           sections: [] };
}

// Copy and Save give the timings as the engine wrote them.
function timingsArtifact(result) {
  return { stage: "timings", compile_id: null, language: "json", src_lines: [], sections: [],
           title: "Measured after the script ran: every compiled callable, eager vs compiled (the whole run)",
           text: JSON.stringify(result.timings, null, 1) };
}
