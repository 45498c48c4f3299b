import { test } from "node:test";
import assert from "node:assert/strict";
import { hostBound, longSpanNote } from "../../static/js/hostbound.js";

// GPU warm series as compiler_core/runtime/measure/timing.py records them, from an H100: the
// pointwise chain's compiled launches took 46 % of its 0.26 ms (not host-bound, sampled longer);
// ResNet-18's eager launches all of its span (the profiler saw the GPU busy 24 %).
const chain = { host_bound: false, long_span: true, host_share: { eager: 0.097, compiled: 0.458 } };
const resnet = { host_bound: true, long_span: true, host_share: { eager: 0.994, compiled: 0.994 } };

test("host-bound is said only where the launches take as long as the device", () => {
  assert.equal(hostBound(chain), false);
  assert.equal(hostBound(resnet), true);
  // stored before host_share was recorded, host_bound meant half of that: not said
  assert.equal(hostBound({ host_bound: true }), false);
});

test("a longer span says the host's share that chose it", () => {
  assert.match(longSpanNote(chain), /takes the host 46 % of its time on the device/);
  assert.equal(longSpanNote({ host_bound: true }), "");
  assert.equal(longSpanNote({ ...chain, long_span: false }), "");
});
