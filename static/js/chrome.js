// Page chrome: draggable splitters (sizes persist) and keyboard shortcuts.

export function installSplitters(store) {
  const root = document.documentElement.style;
  const apply = (sizes) => {
    root.setProperty("--left-width", `${sizes.leftWidth}%`);
    root.setProperty("--editor-height", `${sizes.editorHeight}%`);
  };
  apply(store.state);
  drag(document.getElementById("split-columns"), (e) => ({
    leftWidth: clamp((e.clientX / window.innerWidth) * 100, 15, 85),
  }), apply, store);
  drag(document.getElementById("split-rows"), (e) => {
    const box = document.getElementById("left").getBoundingClientRect();
    return { editorHeight: clamp(((e.clientY - box.top) / box.height) * 100, 15, 90) };
  }, apply, store);
}

// `sizeAt(event)`: the size the handle gives, applied as it moves and kept (the settings saved)
// once it is let go: a save per pointer move wrote the settings to localStorage 60 times a second.
function drag(handle, sizeAt, apply, store) {
  handle.addEventListener("pointerdown", (down) => {
    down.preventDefault();
    handle.setPointerCapture(down.pointerId);
    let size = null;
    const move = (e) => { size = sizeAt(e); apply({ ...store.state, ...size }); };
    const up = () => {
      for (const [type, listener] of listeners) handle.removeEventListener(type, listener);
      if (size) store.set(size);
      window.dispatchEvent(new Event("resize")); // plotly re-fits its figures
    };
    const listeners = [["pointermove", move], ["pointerup", up], ["pointercancel", up]];
    for (const [type, listener] of listeners) handle.addEventListener(type, listener);
  });
}

const clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, v));

// Alt+key shortcuts use event.code, so they work on every keyboard layout (and on macOS,
// where Option+key types a character).
const ALT_KEYS = {
  KeyT: (a) => a.theme(), Equal: (a) => a.fontUp(), Minus: (a) => a.fontDown(),
  Digit2: (a) => a.panes(2), Digit3: (a) => a.panes(3), KeyG: (a) => a.gallery(),
  KeyS: (a) => a.share(), KeyC: (a) => a.colors(), Slash: (a) => a.help(),
  KeyN: (a) => a.nextLesson(), KeyP: (a) => a.previousLesson(), KeyM: (a) => a.present(),
};

// Presentation clickers send PageDown / PageUp (some the arrow keys): while a lesson is open they
// step through it, the arrow keys only where they move nothing else (not in the editor, a pane's
// text, a menu or a field). Caught before the editor, whose PageDown would scroll its code.
const CLICKER_KEYS = { PageDown: 1, PageUp: -1, ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };
const FIELDS = "input, select, textarea";

function clickerStep(e) {
  const delta = CLICKER_KEYS[e.key];
  if (!delta || e.altKey || e.ctrlKey || e.metaKey || e.shiftKey || e.target.closest?.(FIELDS)) return 0;
  if (e.key.startsWith("Arrow") && e.target.closest?.(".cm-editor, [contenteditable=true], [role=tab]")) return 0;
  return delta;
}

export function installShortcuts(actions) {
  document.addEventListener("keydown", (e) => {
    const delta = actions.lessonOpen() ? clickerStep(e) : 0;
    if (!delta) return;
    e.preventDefault();
    e.stopPropagation();
    if (delta > 0) actions.nextLesson();
    else actions.previousLesson();
  }, true);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && document.body.dataset.run === "running") {
      actions.cancel(); // even when the editor used Escape too (it collapses its selection)
    } else if (e.defaultPrevented) {
      return; // the editor handled it (its own Ctrl+Enter)
    } else if ((e.ctrlKey || e.metaKey) && e.key === "Enter") {
      e.preventDefault();
      actions.compile();
    } else if (e.altKey && !e.ctrlKey && !e.metaKey && ALT_KEYS[e.code]) {
      e.preventDefault();
      ALT_KEYS[e.code](actions);
    }
  });
}
