// Choices that survive a reload (theme, font size, panes, split sizes, presenter mode, options,
// the draft).
// The options' defaults come from the engine's catalogue.

const KEY = "torchbolt.settings.v1";
// The stages the panes open on, as a static report opens (it has no saved settings): the Dynamo
// graph, the generated kernels, the AOT forward graph. A pane set to a stage its compile lacks
// shows the first of these it has (stages.js `shownStage`).
export const DEFAULT_STAGES = ["dynamo_graph", "kernels", "aot_forward"];
const DRAFT = "torchbolt.draft.v1";

const defaults = {
  theme: window.matchMedia?.("(prefers-color-scheme: dark)").matches ? "dark" : "light",
  fontSize: 15,
  paneCount: 2,
  panes: DEFAULT_STAGES.map((stage) => ({ compile: null, stage, view: "text" })),
  leftWidth: 40, // % of the window
  editorHeight: 58, // % of the left column
  runTab: "compiles",
  colorLines: true,
  present: false, // presenter mode (main.js)
  ownLayout: null, // the user's panes and tab while a lesson's scenes replace them (main.js)
  lastResult: null, // the key of the stored result last shown: a reload shows it again (main.js)
};

// The options the page offers: choices and switches (the time limit stays the server's).
export const pageOptions = (catalogue) => catalogue.options.filter((o) => o.kind !== "number");

// A saved option keeps its value while the catalogue still allows it.
function options(catalogue, saved) {
  return Object.fromEntries(pageOptions(catalogue).map((o) => {
    const value = saved?.[o.name];
    const allowed = o.kind === "bool" ? typeof value === "boolean" : o.choices.includes(value);
    return [o.name, allowed ? value : o.default];
  }));
}

export function loadSettings(catalogue) {
  let saved = {};
  try { saved = JSON.parse(localStorage.getItem(KEY) || "{}"); } catch { /* unreadable: defaults */ }
  return { ...structuredClone(defaults), ...saved, options: options(catalogue, saved?.options) };
}

export function saveSettings(settings) {
  try { localStorage.setItem(KEY, JSON.stringify(settings)); } catch { /* private mode */ }
}

export function loadDraft() {
  try { return localStorage.getItem(DRAFT); } catch { return null; }
}

export function saveDraft(source) {
  try { localStorage.setItem(DRAFT, source); } catch { /* quota or private mode */ }
}
