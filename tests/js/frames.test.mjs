import { test } from "node:test";
import assert from "node:assert/strict";
import { catalogue } from "./catalogue.mjs";
import { configureStages } from "../../static/js/stages.js";
import { frameLabel } from "../../static/js/frames.js";

configureStages(catalogue);
const NO_FRAME = { name: null, filename: null, line: null, qualname: null };
const label = (name) => catalogue.stages.find((s) => s.name === name).label;

test("a compile of no frame (compiled autograd's !0) is named by the stage it holds", () => {
  const traced = { id: "!0", frame: NO_FRAME, stages: { compiled_autograd_graph: { text: "x" } } };
  assert.equal(frameLabel(traced, "/job/main.py"), label("compiled_autograd_graph"));
  assert.equal(frameLabel({ id: "0/0", frame: NO_FRAME, stages: {} }, "/job/main.py"), "");
});

test("a frame is named as the script names it, one in library code by its qualified name", () => {
  const own = { frame: { name: "f", filename: "/job/main.py", line: 3, qualname: "M.f" }, stages: {} };
  const library = { frame: { name: "inner", filename: "/torch/x.py", line: 9, qualname: "Encoder.forward" }, stages: {} };
  assert.equal(frameLabel(own, "/job/main.py"), "f");
  assert.equal(frameLabel(library, "/job/main.py"), "Encoder.forward");
});
