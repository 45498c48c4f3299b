// torchbolt's page: wires the editor, the run panel and the panes to the API.

import { api, embedded } from "./api.js";
import { JobClient } from "./jobclient.js";
import { h, clear, copyText, linkify, toast } from "./dom.js";
import { createEditor, markLines, selectLine, setDoc, setMarks, setTheme } from "./editor.js";
import { Panes } from "./panes.js";
import { RunPanel, breakLink } from "./runpanel.js";
import { loadDraft, loadSettings, saveDraft, saveSettings } from "./settings.js";
import { createStore } from "./store.js";
import { configureStages } from "./stages.js";
import { MODES } from "./views/index.js";
import { installShortcuts, installSplitters } from "./chrome.js";
import { environmentLabel, mountEnvironmentPicker, otherEnvironment, runIn } from "./environments.js";
import { Lessons } from "./lessons.js";
import { applyLayout, checkLayout, currentLayout, layoutFragment, ownLayout, parseFragment } from "./layout.js";
import { Spotlight } from "./spots.js";
import { buildMenu, compareWith } from "./menu.js";
import { diffRuns } from "./compare.js";
import { buildOptions, labelOptions, markOverrides, setOptions as setFormOptions } from "./toolbar.js";
import { recompileMarks, showSummary, uniqueBreaks } from "./recompiles.js";

const boot = JSON.parse(document.getElementById("boot").textContent);
const $ = (selector) => document.querySelector(selector);
const store = createStore(loadSettings(boot.catalogue));
const settings = store.state; // read here; changed only through the store, which saves them
store.subscribe(saveSettings);
const timing = (window.__tbTiming = {});
const asked = new URLSearchParams(location.search).get("present"); // ?present=1 (or 0)
if (asked !== null) store.set({ present: asked === "1" });
let cursorLine = null;
configureStages(boot.catalogue);

// ---------------------------------------------------------------- editor, panes, run panel
const example = boot.gallery.find((e) => e.slug === new URLSearchParams(location.search).get("example"));
const firstVisit = !boot.share && !example && loadDraft() === null; // opens on the first lesson
function initialSource() {
  return boot.share?.source ?? example?.source ?? loadDraft() ?? boot.gallery[0]?.source ?? "";
}

let draftTimer = null;
const editor = createEditor($("#editor"), {
  doc: initialSource(),
  onRun: () => compile(),
  onCursorLine: (line) => { cursorLine = line; panes?.focusUserLine(line); recolorEditor(); },
  onChange: (text, replaced) => {
    clearTimeout(draftTimer);
    draftTimer = setTimeout(() => saveDraft(text), 400);
    markStale();
    // Other code pasted over a lesson's closes its card; edits to the lesson's code keep it.
    if (replaced && lessons.current && lessons.slugFor(text) !== lessons.current) {
      lessons.show(null);
      showScene();
    }
  },
});

function showUserLine(line) {
  selectLine(editor, line);
}

const spotlight = new Spotlight($("#left"));
const panes = new Panes($("#panes"), store, {
  onUserLine: showUserLine, onTexts: () => { recolorEditor(); spotlight.reveal(); },
  optionLabel: (name) => boot.catalogue.options.find((o) => o.name === name)?.label ?? name,
  onRunWith: (name) => { setOptions({ [name]: true }); compile(); },
});
// The timings' kernel attribution (attribution.js) links a row to the user's lines and a kernel
// to its source: the Kernels stage of its compile, in the pane beside the timings.
document.addEventListener("torchbolt-line", (event) => showUserLine(event.detail.line));
document.addEventListener("torchbolt-kernel", (event) => {
  const from = panes.panes.find((pane) => pane.el.contains(event.target)) ?? panes.panes[0];
  const target = panes.panes.length > 1 ? panes.panes[(panes.panes.indexOf(from) + 1) % panes.panes.length] : from;
  target.choose({ compile: event.detail.compile });
  panes.openKernel(event.detail.name, from);
});
const run = new RunPanel($("#run"), store, {
  errorKinds: boot.catalogue.error_kinds, onLine: showUserLine,
  onCompile: (id) => panes.showCompile(id),
  onStage: (id, stage) => { panes.panes[0].choose(id ? { compile: id, stage } : { stage }); },
  onCompare: (id, stage, previous) => panes.compare(id, stage, previous),
  onStop: () => { run.stopped = true; cancel(); }, // after the script: keep the stages shown
});
const jobs = new JobClient({
  run, timing, show: showJob,
  refused: (error) => {
    run.finish({ status: "failed", error: { type: "Request", message: error.message } });
    document.body.dataset.run = "finished";
    toast(error.message, 5000);
  },
  following: () => { $("#cancel").hidden = false; },
});
const cancel = () => jobs.cancel();

const lessons = new Lessons($("#lesson"), $("#gallery-menu"), boot, {
  onOpen: (source) => { setDoc(editor, source); compile(); },
  onScene: () => showScene(),
});

// The open lesson step's scene (lessons.py) once its lesson's result is shown: the panes and tab
// checked like a share link's, then the spots its text names; body[data-scene] once all are in view.
function showScene() {
  const scene = lessons.scene();
  delete document.body.dataset.scene;
  const own = ownLayout(store, scene); // a lesson's scene replaces it, or it comes back
  if (own) showLayout(own);
  if (!scene || !panes.result || jobs.current?.source !== lessons.example(lessons.current).source) {
    return spotlight.clear();
  }
  showLayout(checkLayout(scene, panes.result, MODES));
  spotlight.show(scene.spots, scene.points ?? [], () => { document.body.dataset.scene = scene.id; });
}

// A share link's layout (its fragment, checked against the shared result), presenter mode included.
function showSharedLayout(hash, result) {
  const layout = checkLayout(parseFragment(hash), result, MODES);
  if (layout.present !== null) store.set({ present: layout.present });
  applyLook();
  showLayout(layout);
}

// A checked layout's panes and tab, the toolbar's toggles and the editor's colours with them.
function showLayout(layout) {
  applyLayout(layout, { panes, run });
  syncToggles();
  recolorEditor();
}

function recolorEditor() {
  const lines = settings.colorLines ? panes.userLines() : new Set();
  markLines(editor, new Map([...lines].map((l) => [l, l])), new Set(cursorLine ? [cursorLine] : [])); // user line = doc line
}

// ---------------------------------------------------------------- results
function marksFor(result) {
  const marks = uniqueBreaks(result).filter((b) => b.line).map((b) => ({
    line: b.line, severity: "warning", title: "graph break", text: b.reason,
    render: () => h("div", { class: "mark-message" }, h("strong", {}, "Graph break: "),
      b.gb_code ? [breakLink(b), " "] : "", b.gb_type ?? b.reason,
      b.explanation ? h("p", {}, b.explanation) : null,
      b.hints?.length ? h("ul", {}, b.hints.map((hint) => h("li", {}, hint))) : null),
  }));
  const e = result.error;
  if (e?.line) {
    marks.push({ line: e.line, severity: "error", title: e.type, text: `${e.type}: ${e.message}`,
                 render: () => h("div", { class: "mark-message message" }, h("strong", {}, `${e.type}: `), linkify(e.message)) });
  }
  return marks;
}

function showResult(result, key) {
  if (result && !timing.firstContent && result.compiles?.some((c) => Object.keys(c.stages).length)) {
    timing.firstContent = performance.now() - timing.submit;
  }
  run.setResult(result);
  markOverrides($("#options"), result);
  panes.setResult(result, key, jobs.current?.id ? { handle: jobs.current.id } : key ? { key } : null);
  setMarks(editor, result ? [...marksFor(result), ...recompileMarks(result)] : []);
  showSummary($("#summary"), result, showUserLine);
  recolorEditor();
  markStale();
  if (result?.environment?.torch) showEnvironment(result.environment);
}

// A result is stale when the editor's code is not the code that ran: a banner says so and the
// panes are dimmed until the next compile.
function markStale() {
  const stale = Boolean(panes.result && jobs.current && editor.state.doc.toString() !== jobs.current.source);
  document.body.toggleAttribute("data-stale", stale);
  $("#stale").hidden = !stale;
}

// The shown result is forgotten (its job no longer followed, its links gone): other code was
// loaded into the editor, or is about to be compiled.
// Resolves once the server has let go of its job.
function forgetResult() {
  const cancelled = jobs.forget();
  store.set({ lastResult: null });
  run.reset();
  spotlight.clear();
  showResult(null, null);
  $("#cancel").hidden = true;
  $("#share").disabled = $("#download").disabled = true;
  document.body.dataset.run = "idle";
  if (location.pathname !== "/") history.replaceState(null, "", pageUrl("/"));
  return cancelled; // it frees this client's slot for the next job
}

// A path of this page that keeps presenter mode on in the address bar.
const pageUrl = (path) => `${path}${settings.present ? "?present=1" : ""}`;

function showEnvironment(env) {
  const device = env.device ? `${env.device}${env.device_name ? `: ${env.device_name}` : ""}` : "starting ...";
  clear($("#env"), h("span", {}, `torch ${env.torch ?? "?"}`), " ", h("span", {}, `triton ${env.triton ?? "none"}`),
    " ", h("span", {}, device)); // spaces: where the line may wrap
  const text = (v) => (v && typeof v === "object" ? Object.entries(v).map(([k, x]) => `${k} ${x}`).join(", ") : v ?? "none");
  $("#env").title = Object.entries(env).map(([k, v]) => `${k}: ${text(v)}`).join("\n");
}

// ---------------------------------------------------------------- jobs (jobclient.js)
function showJob(data, final) {
  showResult(data.result, data.key);
  if (data.message) toast(data.message, 8000); // the engine failed, not the script
  if (final) {
    store.set({ lastResult: data.result?.error?.type === "Cancelled" ? null : data.key }); // not stored
    timing.full = performance.now() - timing.submit;
    run.finish({ status: data.status, cached: data.cached, error: data.result?.error }, timing.full / 1000);
    $("#cancel").hidden = true;
    $("#share").disabled = $("#download").disabled = !data.key;
    document.body.dataset.run = "finished";
    showScene();
  }
}

async function compile() {
  if (embedded) return toast("This is a static report: open its code in torchbolt to compile it", 5000);
  const source = editor.state.doc.toString();
  if (!source.trim()) { // nothing to run: say what to do instead
    forgetResult();
    return run.empty();
  }
  if (source !== jobs.current?.source) panes.clearDiffs(); // a diff of other code's stages would mislead
  const cancelled = forgetResult(); // from here until the server takes this job, an Escape cancels it
  run.cancelled = false;
  for (const key of Object.keys(timing)) delete timing[key];
  timing.submit = performance.now();
  run.start();
  document.body.dataset.run = "running";
  await jobs.submit(source, settings.options, cancelled);
}

// "⇆ Both": the code runs in the chosen environment as any compile, and in another one beside
// it; once that run is stored, its compiles join the pane menus ("B ...") and the first two
// panes diff the same compile of both runs, stage by stage (compare.js).
async function compareEnvironments() {
  const other = otherEnvironment();
  const elsewhere = runIn(other, editor.state.doc.toString(), settings.options);
  elsewhere.catch(() => {}); // awaited below, after this run has started
  await compile();
  try {
    toast(`Running it in ${environmentLabel(other)} too ...`, 4000);
    await compareWith(panes, await elsewhere, `Both runs are diffed in the first two panes (B: ${environmentLabel(other)}): `
                      + "a stage picked in one pane moves the other");
    diffRuns(panes);
  } catch (error) {
    toast(`Could not run it in ${environmentLabel(other)}: ${error.message}`, 8000);
  }
}

// A link shares the shown result, whose code may no longer be the editor's: then no link is
// copied (it would open other code than the editor shows), and the toast says what to do.
function share() {
  const { current } = jobs;
  if (!current?.key) return;
  if (editor.state.doc.toString() !== current.source) {
    toast("The code changed since this result: compile first (Ctrl+Enter), or undo the edits to "
          + "share the result of the code as it was", 6000);
    return;
  }
  const layout = `#${layoutFragment({ ...currentLayout(settings), panes: panes.shownLayout() })}`; // as shown
  const url = `${location.origin}/r/${current.key}${layout}`;
  copyText(url, `Share link copied: ${url}`);
  history.replaceState(null, "", pageUrl(`/r/${current.key}`) + layout);
}

// ---------------------------------------------------------------- toolbar
const setOptions = (options) => setFormOptions($("#options"), store, options);

// An "All examples" entry: its code in the editor, the previous result gone.
function loadExample(example) {
  setDoc(editor, example.source);
  forgetResult();
  panes.clearDiffs();
  lessons.show(lessons.slugFor(example.source));
  showScene();
  toast(`Loaded “${example.title}”. Press Ctrl+Enter to compile.`);
  editor.focus();
}

function applyLook() {
  document.documentElement.dataset.theme = settings.theme;
  document.documentElement.toggleAttribute("data-present", settings.present);
  labelOptions($("#options"), settings.present);
  document.documentElement.style.fontSize = `${settings.fontSize}px`;
  setTheme(editor, settings.theme === "dark");
  panes.setTheme(settings.theme === "dark");
  panes.render();
}

const actions = {
  compile, cancel, share,
  theme: () => { store.set({ theme: settings.theme === "dark" ? "light" : "dark" }); applyLook(); },
  fontUp: () => { store.set({ fontSize: Math.min(30, settings.fontSize + 1) }); applyLook(); },
  fontDown: () => { store.set({ fontSize: Math.max(11, settings.fontSize - 1) }); applyLook(); },
  panes: (n) => { panes.setCount(n); syncToggles(); recolorEditor(); },
  gallery: () => { $("#gallery-menu").hidden = !$("#gallery-menu").hidden; },
  colors: () => {
    store.set({ colorLines: !settings.colorLines });
    syncToggles();
    panes.recolor();
    recolorEditor();
  },
  help: () => $("#help-dialog").showModal(),
  lessonOpen: () => Boolean(lessons.current),
  nextLesson: () => lessons.step(1),
  previousLesson: () => lessons.step(-1),
  // Presenter mode (a room's projector): two panes, larger code, long lines wrapped, the lesson
  // card's buttons in place; also ?present=1. The choice persists with the other settings.
  present: () => {
    store.set({ present: !settings.present });
    if (settings.present && settings.paneCount > 2) panes.setCount(2);
    history.replaceState(null, "", pageUrl(location.pathname));
    syncToggles();
    applyLook();
    recolorEditor();
  },
};

function syncToggles() {
  for (const button of document.querySelectorAll("[data-panes]")) {
    button.setAttribute("aria-pressed", String(Number(button.dataset.panes) === settings.paneCount));
  }
  $("#colors").setAttribute("aria-pressed", String(settings.colorLines));
  $("#present").setAttribute("aria-pressed", String(settings.present));
}

function wireToolbar() {
  $("#compile").onclick = compile;
  $("#cancel").onclick = cancel;
  $("#share").onclick = share;
  $("#download").onclick = () => { location.href = api.reportUrl(jobs.current.key); };
  $("#theme").onclick = actions.theme;
  $("#font-up").onclick = actions.fontUp;
  $("#font-down").onclick = actions.fontDown;
  $("#colors").onclick = actions.colors;
  $("#help").onclick = actions.help;
  $("#present").onclick = actions.present;
  for (const button of document.querySelectorAll("[data-panes]")) {
    button.onclick = () => actions.panes(Number(button.dataset.panes));
  }
  syncToggles();
}

// The stored result last shown on this page, shown again after a reload (null where the store
// no longer has it).
async function showLastResult(key) {
  let stored;
  try {
    stored = await api.result(key);
  } catch {
    return store.set({ lastResult: null });
  }
  if (jobs.current || settings.lastResult !== key) return; // a run started meanwhile
  jobs.adopt(key, stored.source);
  showResult(stored.result, key);
  run.finish({ status: stored.result.error ? "failed" : "done", cached: true, error: stored.result.error }, null);
  $("#share").disabled = $("#download").disabled = false;
  document.body.dataset.run = "finished";
  showScene();
}

// ---------------------------------------------------------------- start
buildOptions($("#options"), boot.catalogue, store);
buildMenu($("#gallery-menu"), $("#gallery-button"), { gallery: boot.gallery, lessons, panes, onExample: loadExample });
if (settings.present && settings.paneCount > 2 && asked === "1") panes.setCount(2);
wireToolbar();
installSplitters(store);
installShortcuts(actions);
applyLook();
showEnvironment(boot.environment);
if (!embedded) mountEnvironmentPicker($("#env"), { onCompare: compareEnvironments });
if (!boot.environment.device && !embedded) {
  const poll = setInterval(async () => {
    const { environment } = await api.status().catch(() => ({}));
    if (environment?.device) { showEnvironment(environment); clearInterval(poll); }
  }, 2000);
}
if (boot.share) {
  setOptions(boot.share.options);
  jobs.adopt(boot.share.key, boot.share.source);
  showResult(boot.share.result, boot.share.key);
  run.finish({ status: boot.share.result.error ? "failed" : "done", cached: true,
               error: boot.share.result.error }, null);
  if (location.hash) showSharedLayout(location.hash, boot.share.result);
  $("#share").disabled = $("#download").disabled = !boot.share.key;
}
if (embedded) { // a static report: the result only, nothing to run
  document.body.dataset.mode = "report";
  for (const control of $("#options").elements) control.disabled = true;
}
if (firstVisit && boot.lessons.length) lessons.open(boot.lessons[0].slug); // its result at once when stored
else if (!boot.share) lessons.show(lessons.slugFor(editor.state.doc.toString()));
if (!boot.share && !example && !embedded && !firstVisit && settings.lastResult) await showLastResult(settings.lastResult);
const compareKey = new URLSearchParams(location.search).get("compare");
if (compareKey && !embedded) await compareWith(panes, compareKey);
document.body.dataset.ready = "1";
