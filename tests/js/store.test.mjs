import { test } from "node:test";
import assert from "node:assert/strict";
import { createStore } from "../../static/js/store.js";

test("a change reaches every subscriber until it unsubscribes, a pane's choices in place", () => {
  const store = createStore({ runTab: "calls", panes: [{ stage: "guards", view: "text" }] });
  const pane = store.state.panes[0];
  const heard = [], other = [];
  store.subscribe((state) => heard.push(state.runTab));
  const stop = store.subscribe((state) => other.push(state.panes[0].stage));
  store.set({ runTab: "breaks" });
  stop();
  store.setPane(0, { stage: "dynamo_graph", view: null });
  assert.deepEqual(heard, ["breaks", "breaks"]);
  assert.deepEqual(other, ["guards"]);
  assert.equal(pane.stage, "dynamo_graph"); // a pane keeps its state object
});
