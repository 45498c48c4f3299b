import { test } from "node:test";
import assert from "node:assert/strict";
import { shortPaths, shownPath } from "../../static/js/paths.js";

test("a package's file is shown from its package on, the user's file by its name", () => {
  const text = "# File: /usr/lib/python3/site-packages/torch/nn/modules/linear.py:125 in forward, "
    + "code: x\n# File: /tmp/torchbolt-job-x1/main.py:12 in f";
  const [torch, user] = shortPaths(text);
  assert.equal(torch.path.slice(torch.hide), "torch/nn/modules/linear.py");
  assert.equal(text.slice(torch.from, torch.to), torch.path);
  assert.equal(user.path.slice(user.hide), "main.py");
});

test("torch's cut form in guard comments is a path too", () => {
  assert.deepEqual(shortPaths("x  # ob/main.py:6 in f").map((p) => p.path), ["ob/main.py"]);
});

test("shownPath names the user's script alone, any other path whole", () => {
  assert.equal(shownPath("/job/main.py", "/job/main.py"), "main.py");
  assert.equal(shownPath("/other/lib.py", "/job/main.py"), "/other/lib.py");
});
