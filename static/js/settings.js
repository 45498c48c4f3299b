// Choices that survive a reload (theme, font size, panes, split sizes, options, the draft).

const KEY = "torchbolt.settings.v1";
const DRAFT = "torchbolt.draft.v1";

export const defaults = {
  theme: window.matchMedia?.("(prefers-color-scheme: dark)").matches ? "dark" : "light",
  fontSize: 15,
  paneCount: 2,
  panes: [
    { compile: null, stage: "dynamo_graph", view: "text" },
    { compile: null, stage: "kernels", view: "text" },
    { compile: null, stage: "aot_forward", view: "text" },
  ],
  leftWidth: 40, // % of the window
  editorHeight: 58, // % of the left column
  runTab: "compiles",
  colorLines: true,
  options: { device: "auto", mode: "default", dynamic: "auto", backend: "inductor", fullgraph: false,
             gpu_preview: false, measure: true },
};

export function loadSettings() {
  try {
    const saved = JSON.parse(localStorage.getItem(KEY) || "{}");
    return { ...structuredClone(defaults), ...saved };
  } catch {
    return structuredClone(defaults);
  }
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
