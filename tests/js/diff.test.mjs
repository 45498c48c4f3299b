import { test } from "node:test";
import assert from "node:assert/strict";
import { definedNames, diffLines } from "../../static/js/diff.js";

const graph = (a, b) => ["def forward(self, L_x_: \"f32[4]\"):", `    ${a} = torch.sin(L_x_)`,
                         `    ${b} = torch.cos(${a})`, `    return (${b},)`].join("\n");

test("an FX graph traced again with other node names has no changed line", () => {
  const diff = diffLines(graph("sin", "cos"), graph("sin_1", "cos_1"), { fx: true });
  assert.equal(diff.left.size + diff.right.size, 0);
  assert.equal(diff.renamed, 3);
});

test("as plain text the same two graphs differ on the renamed lines", () => {
  const diff = diffLines(graph("sin", "cos"), graph("sin_1", "cos_1"));
  assert.deepEqual([...diff.left], [2, 3, 4]);
});

test("a changed op is a change, not a rename", () => {
  const diff = diffLines(graph("sin", "cos"), graph("sin", "cos").replace("torch.cos", "torch.tan"), { fx: true });
  assert.deepEqual([...diff.left], [3]);
  assert.deepEqual([...diff.right], [3]);
});

test("the names a graph defines are its parameters and assigned names", () => {
  assert.deepEqual([...definedNames(graph("a", "b").split("\n"))].sort(), ["L_x_", "a", "b"]);
});
