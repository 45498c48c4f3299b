import { test } from "node:test";
import assert from "node:assert/strict";
import { recompileMarks, uniqueBreaks } from "../../static/js/recompiles.js";

test("a break on the same line for the same reason is one gutter mark", () => {
  const result = { graph_breaks: [{ line: 5, reason: "print" }, { line: 5, reason: "print" },
                                  { line: 5, reason: "item" }] };
  assert.equal(uniqueBreaks(result).length, 2);
  assert.deepEqual(uniqueBreaks(null), []);
});

test("a recompile's misses are one mark, at the guarded value's line where known", () => {
  const result = { recompiles: [
    { compile_id: "0/1", line: 11, source_line: 7, summary: "k changed: 1 -> 2" },
    { compile_id: "0/1", line: 11, reason: "k changed" },
    { compile_id: "0/2", line: 11, summary: "n changed" },
  ] };
  const marks = recompileMarks(result);
  assert.deepEqual(marks.map((m) => [m.line, m.text]), [[7, "k changed: 1 -> 2"], [11, "n changed"]]);
});
