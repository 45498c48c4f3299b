// A slide's layout: the panes (each a compile, stage, view and the pane it is diffed with), the
// run panel's tab and presenter mode. A share link carries it in its fragment
// (#pane=0/1,guards,text,0&pane=...&tab=calls&present=1), a lesson step as its scene
// (lessons.py). Either way `checkLayout` compares each field with the result it is shown with
// before anything is applied: a compile, view or diff that fails gives the pane's default (the
// first compile, the stage's first view, no diff); a stage, tab or presenter mode that fails is
// left as the page has it.

import { TABS } from "./runpanel.js";
import { pickable } from "./programs.js";
import { stageList } from "./stages.js";

const COUNTS = new Set([2, 3]); // the pane counts the toolbar offers

// The layout the page shows now.
export function currentLayout(settings) {
  const panes = settings.panes.slice(0, settings.paneCount)
    .map(({ compile, stage, view, diff }) => ({ compile, stage, view, diff }));
  return { panes, tab: settings.runTab, present: settings.present };
}

export function layoutFragment({ panes, tab, present }) {
  const params = new URLSearchParams();
  for (const { compile, stage, view, diff } of panes) {
    params.append("pane", [compile ?? "", stage, view ?? "", diff ?? ""].join(","));
  }
  params.set("tab", tab);
  params.set("present", present ? "1" : "0");
  return params.toString();
}

// A fragment's fields as the link gives them (strings, unchecked).
export function parseFragment(hash) {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  const panes = params.getAll("pane").map((pane) => {
    const [compile, stage, view, diff] = pane.split(",");
    return { compile, stage, view, diff: diff === "" || diff === undefined ? null : Number(diff) };
  });
  const present = params.get("present");
  return { panes: panes.length ? panes : null, tab: params.get("tab"),
           present: present === "1" ? true : present === "0" ? false : null };
}

// The fields of `layout` that hold for `result`: compiles it has, stages, views (`modes`: the tabs
// of every view, views/index.js) and run panel tabs the page knows, a diff with another of the panes. Else a pane shows the first compile and the stage's first
// view, diffed with none, and keeps its own stage.
export function checkLayout(layout, result, modes) {
  const ids = new Set(pickable(result).map((entry) => entry.id));
  const stages = new Set(stageList(null).map(([name]) => name));
  const count = layout.panes?.length;
  const first = result?.compiles?.[0]?.id ?? null; // a scene's compile "first" (lessons.py)
  const pane = ({ compile, stage, view, diff }, index) => ({
    compile: compile === "first" ? first : ids.has(compile) ? compile : null,
    ...(stages.has(stage) ? { stage } : {}),
    view: modes.has(view) ? view : null,
    diff: Number.isInteger(diff) && diff >= 0 && diff < count && diff !== index ? diff : null,
  });
  return {
    panes: COUNTS.has(count) ? layout.panes.map(pane) : null,
    tab: TABS.some(([name]) => name === layout.tab) ? layout.tab : null,
    present: typeof layout.present === "boolean" ? layout.present : null,
  };
}

// The user's own panes and tab, kept in the settings (store.js) while a lesson's scenes replace
// them: kept when a scene first does; once no lesson is open, returned (to be shown) and forgotten.
export function ownLayout(store, scene) {
  const own = store.state.ownLayout;
  if (scene && !own) store.set({ ownLayout: structuredClone(currentLayout(store.state)) });
  if (scene || !own) return null;
  store.set({ ownLayout: null });
  return own;
}

// The checked layout's panes and tab (presenter mode is the page's: main.js).
export function applyLayout({ panes: states, tab }, { panes, run }) {
  if (states) panes.setLayout(states);
  if (tab) run.show(tab);
}
