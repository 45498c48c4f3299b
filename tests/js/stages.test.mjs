import { test } from "node:test";
import assert from "node:assert/strict";
import { catalogue } from "./catalogue.mjs";
import { artifactFor, configureStages, leftOut, resolveStage, shownStage, stageLabel, stageList,
         stageMenu, stageShownBy, viewOf } from "../../static/js/stages.js";

configureStages(catalogue);
const text = (stage) => ({ stage, text: "x", src_lines: [null] });
const training = { id: "0/0", stages: { dynamo_graph: text("dynamo_graph"), aot_forward: text("aot_forward") }, kernels: [] };
const inference = { id: "1/0", stages: { dynamo_graph: text("dynamo_graph"), aot_inference: text("aot_inference") }, kernels: [] };

test("the stages are the catalogue's, in its order, and a newer stage by its title", () => {
  const names = stageList(null).map(([name]) => name);
  assert.deepEqual(names, catalogue.stages.map((s) => s.name));
  const newer = { stages: { future_ir: { title: "Future IR" } } };
  assert.deepEqual(stageList(newer).at(-1), ["future_ir", "Future IR"]);
  assert.equal(stageLabel("future_ir", newer), "Future IR");
});

test("each stage's view is the one the server declares", () => {
  for (const stage of catalogue.stages) assert.equal(viewOf(stage.name), stage.view);
  assert.equal(stageShownBy("kernels"), catalogue.stages.find((s) => s.view === "kernels").name);
});

test("a pane set to the forward shows an inference compile's graph, and back", () => {
  assert.equal(resolveStage(inference, "aot_forward"), "aot_inference");
  assert.equal(resolveStage(training, "aot_inference"), "aot_forward");
  assert.equal(resolveStage(training, "aot_backward"), "aot_backward");
});

test("a stage the compile lacks gives way to the first fallback it has", () => {
  const result = { compiles: [training], timings: [] };
  assert.equal(shownStage(training, "output_code", result, ["kernels", "dynamo_graph"]), "dynamo_graph");
  assert.equal(shownStage(training, "output_code", { ...result, partial: true }, []), "dynamo_graph");
  assert.equal(shownStage(training, "output_code", null, []), "output_code"); // before a result
});

test("the menu lists what the compile has and what a run option left out", () => {
  const option = catalogue.stages.find((s) => s.option && s.field === "stages");
  const result = { compiles: [training], options: { [option.option]: false } };
  const menu = stageMenu(training, result, "dynamo_graph").map(([name]) => name);
  assert.ok(menu.includes("aot_forward") && menu.includes(option.name));
  assert.ok(!menu.includes("aot_backward"));
  assert.ok(leftOut(option.name, training, result));
});
