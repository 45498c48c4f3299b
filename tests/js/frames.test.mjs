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

test("a frame is named by its code's qualified name (a method by its class), else its name", () => {
  const frame = (name, qualname, filename = "/job/main.py") => ({ frame: { name, filename, line: 3, qualname }, stages: {} });
  const named = (compile) => frameLabel(compile, "/job/main.py");
  assert.equal(named(frame("forward", "Gate.forward")), "Gate.forward");
  assert.equal(named(frame("torch_dynamo_resume_in_forward_at_9", "Gate.torch_dynamo_resume_in_forward_at_9")),
               "Gate.torch_dynamo_resume_in_forward_at_9");
  assert.equal(named(frame("inner", "Encoder.forward", "/torch/x.py")), "Encoder.forward");
  assert.equal(named(frame("f", null)), "f"); // no code object seen (a TORCH_TRACE log)
  assert.equal(named(frame("f", "f")), "f");
  assert.equal(named(frame("g", "f")), "g"); // f.__code__.replace(co_name="g") keeps f's qualname
});
