import { test } from "node:test";
import assert from "node:assert/strict";
import { graphsRun } from "../../static/js/calls.js";

// A callable whose first call broke its graph (0/0, then the resume function's 1/0) and whose
// second recompiled for a new size (0/1, then 1/1); calls as compiler_core/runtime/calls.py
// records them.
const result = { calls: [
  { callable: 0, arguments: { x: "float32[4, 32] cpu" }, outcome: "compile", compile_id: "0/0", entries: ["0/0", "1/0"] },
  { callable: 0, arguments: { x: "float32[8, 32] cpu" }, outcome: "recompile", compile_id: "0/1", entries: ["0/1", "1/1"] },
  { callable: 1, arguments: { x: "float32[4, 32] cpu" }, outcome: "eager", compile_id: null, entries: [] },
] };

test("the graphs a script's call ran are all its entries, the resume function's too", () => {
  assert.deepEqual(graphsRun(result, 0, ["float32[4, 32] cpu"]), ["0/0", "1/0"]);
  assert.deepEqual(graphsRun(result, 0, ["float32[8, 32] cpu"]), ["0/1", "1/1"]);
  assert.deepEqual(graphsRun(result, 1, ["float32[4, 32] cpu"]), []);
});
