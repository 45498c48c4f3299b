import { test } from "node:test";
import assert from "node:assert/strict";
import { catalogue } from "./catalogue.mjs";
import { createStore } from "../../static/js/store.js";

// layout.js reaches api.js (through the run panel's tab list), which reads the page's boot data.
globalThis.document = { getElementById: () => ({ textContent: "{}" }) };
const { configureStages } = await import("../../static/js/stages.js");
const { checkLayout, layoutFragment, ownLayout, parseFragment } = await import("../../static/js/layout.js");
configureStages(catalogue);

const MODES = new Set(["text", "graph", "grouped"]); // views/index.js's, in part
const result = { compiles: [{ id: "0/0", stages: {} }, { id: "1/0", stages: {} }] };

test("a share link's fragment gives back the layout it was made of", () => {
  const layout = { panes: [{ compile: "0/0", stage: "guards", view: "text", diff: 1 },
                           { compile: "1/0", stage: "dynamo_graph", view: "graph", diff: null }],
                   tab: "calls", present: true };
  const parsed = parseFragment(`#${layoutFragment(layout)}`);
  assert.deepEqual(checkLayout(parsed, result, MODES), layout);
});

test("a field the result or the page does not know is dropped, the others kept", () => {
  const parsed = parseFragment("#pane=9/9,no_such_stage,nope,0&pane=0/0,guards,grouped,7&tab=x");
  assert.deepEqual(checkLayout(parsed, result, MODES), {
    panes: [{ compile: null, view: null, diff: null }, { compile: "0/0", stage: "guards", view: "grouped", diff: null }],
    tab: null, present: null });
  assert.equal(checkLayout(parseFragment("#pane=0/0,guards,text,"), result, MODES).panes, null); // one pane
});

test("a lesson keeps the user's layout while its scenes show and gives it back once", () => {
  const store = createStore({ panes: [{ compile: null, stage: "guards", view: "text", diff: null }],
                              paneCount: 1, runTab: "calls", present: false, ownLayout: null });
  const saved = [];
  store.subscribe((state) => saved.push(structuredClone(state.ownLayout)));
  assert.equal(ownLayout(store, { panes: [] }), null);
  store.set({ runTab: "breaks" }); // the scene's tab
  assert.equal(ownLayout(store, { panes: [] }), null); // kept once, not overwritten by the scene's
  assert.equal(ownLayout(store, null).tab, "calls");
  assert.equal(ownLayout(store, null), null);
  assert.deepEqual(saved.map((own) => own?.tab ?? null), ["calls", "calls", null]); // each change heard
});
