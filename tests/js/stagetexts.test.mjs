import { test } from "node:test";
import assert from "node:assert/strict";

// stagetexts.js asks api.js, which reads the page's boot data, for each part.
globalThis.document = { getElementById: () => ({ textContent: "{}" }) };
const { api } = await import("../../static/js/api.js");
const { StageTexts } = await import("../../static/js/stagetexts.js");

// A running job's result as its index gives it (app/transport.py): each stage without its text;
// the run's timings whole. The Kernels stage's measured times come with the timings, its size not.
const index = ({ partial, timings }) => ({
  partial, timings,
  compiles: [{ id: "0/0", indexed: true, stages: { kernels: { stage: "kernels", size: 120 } } }],
});
const TIMING = { callable: 0, name: "f", kernels: { compiled: [{ name: "cpp_fused_sin_0", us_per_call: 3 }] } };

// The stage texts of one job, each part asked of a stand-in server; `asked` counts the asks.
function job() {
  const asked = [];
  api.stage = async (where, compileId, stage) => {
    asked.push(`${compileId} ${stage}`);
    return { artifact: { stage, text: "x".repeat(120), src_lines: [] } };
  };
  const texts = new StageTexts(() => {});
  texts.setSource({ handle: "j1" });
  const show = async (result) => {
    texts.complete(result.compiles[0], "kernels", result);
    await new Promise((resolve) => setImmediate(resolve));
    return texts.complete(result.compiles[0], "kernels", result);
  };
  return { asked, show };
}

test("a part asked once the run's timings were in is not asked again when the run ends", async () => {
  const { asked, show } = job();
  assert.equal(await show(index({ partial: true, timings: [TIMING] })) !== null, true);
  await show(index({ partial: false, timings: [TIMING] }));
  assert.deepEqual(asked, ["0/0 kernels"]);
});

test("a part asked before the timings came is asked again once they are in", async () => {
  const { asked, show } = job();
  await show(index({ partial: true, timings: [] }));
  await show(index({ partial: true, timings: [] })); // a poll with nothing new for it
  await show(index({ partial: false, timings: [TIMING] }));
  assert.deepEqual(asked, ["0/0 kernels", "0/0 kernels"]);
});

test("a run measured nothing: its parts are asked once", async () => {
  const { asked, show } = job();
  await show(index({ partial: true, timings: [] }));
  await show(index({ partial: false, timings: [] }));
  assert.deepEqual(asked, ["0/0 kernels"]);
});
