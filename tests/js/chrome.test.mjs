import { test } from "node:test";
import assert from "node:assert/strict";
import { createStore } from "../../static/js/store.js";
import { installSplitters } from "../../static/js/chrome.js";

// The page's splitters in a stand-in document: two handles, the root's CSS variables, the left
// column's box; pointer events as the browser sends them while a handle is dragged.
function page() {
  const handles = { "split-columns": new EventTarget(), "split-rows": new EventTarget() };
  for (const handle of Object.values(handles)) handle.setPointerCapture = () => {};
  const css = new Map();
  globalThis.window = Object.assign(new EventTarget(), { innerWidth: 1000 });
  globalThis.document = {
    documentElement: { style: { setProperty: (name, value) => css.set(name, value) } },
    getElementById: (id) => handles[id] ?? { getBoundingClientRect: () => ({ top: 0, height: 500 }) },
  };
  return { handles, css };
}

const pointer = (type, fields = {}) => Object.assign(new Event(type), { pointerId: 1, ...fields });

test("a dragged splitter resizes as it moves and saves the settings once, when let go", () => {
  const { handles, css } = page();
  const store = createStore({ leftWidth: 40, editorHeight: 58 });
  const saved = [];
  store.subscribe((state) => saved.push({ ...state }));
  installSplitters(store);
  const handle = handles["split-columns"];
  handle.dispatchEvent(pointer("pointerdown"));
  for (const x of [410, 420, 430, 500]) {
    handle.dispatchEvent(pointer("pointermove", { clientX: x }));
    assert.equal(css.get("--left-width"), `${x / 10}%`); // follows the pointer
  }
  assert.equal(saved.length, 0, "saved on a mouse move");
  handle.dispatchEvent(pointer("pointerup"));
  assert.deepEqual(saved, [{ leftWidth: 50, editorHeight: 58 }]);
  handle.dispatchEvent(pointer("pointermove", { clientX: 600 })); // no longer dragged
  assert.equal(css.get("--left-width"), "50%");
  assert.equal(saved.length, 1);
});

test("a drag the browser cancels keeps the size it reached, saved once", () => {
  const { handles, css } = page();
  const store = createStore({ leftWidth: 40, editorHeight: 58 });
  let saves = 0;
  store.subscribe(() => saves++);
  installSplitters(store);
  const handle = handles["split-rows"];
  handle.dispatchEvent(pointer("pointerdown"));
  handle.dispatchEvent(pointer("pointermove", { clientY: 300 }));
  handle.dispatchEvent(pointer("pointercancel"));
  handle.dispatchEvent(pointer("pointermove", { clientY: 400 })); // no longer dragged
  assert.equal(css.get("--editor-height"), "60%");
  assert.equal(store.state.editorHeight, 60);
  assert.equal(saves, 1);
});
