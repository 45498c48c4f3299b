// The Examples menu: the lessons first (lessons.js), then every gallery example, a TORCH_TRACE
// log to open, and comparing with another stored result.

import { api, embedded } from "./api.js";
import { h, toast } from "./dom.js";

// `onExample(example)`: an "All examples" entry was picked.
export function buildMenu(menu, button, { gallery, lessons, panes, onExample }) {
  for (const example of gallery) {
    menu.append(h("button", { role: "menuitem", dataset: { slug: example.slug }, onclick: () => {
      menu.hidden = true;
      onExample(example);
    } }, h("strong", {}, example.title), h("span", {}, example.teaches)));
  }
  lessons.buildMenu(() => { menu.hidden = true; });
  menu.append(...traceLogItem(menu), ...compareItems(menu, panes));
  button.onclick = () => { menu.hidden = !menu.hidden; };
  // Esc closes the menu (and still cancels a running compile: chrome.js's shortcut).
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !menu.hidden) menu.hidden = true;
  });
  document.addEventListener("click", (e) => {
    if (!e.target.closest(".gallery")) menu.hidden = true;
  });
}

// A TORCH_TRACE folder's log files, read by the server into a result shown as a shared one.
function traceLogItem(menu) {
  const input = h("input", { type: "file", multiple: true, hidden: true, onchange: async () => {
    menu.hidden = true;
    toast("Reading the trace log ...");
    try {
      const { key } = await api.traceLog(input.files);
      location.href = `/r/${key}`;
    } catch (error) {
      toast(`Could not read the trace log: ${error.message}`, 8000);
    }
    input.value = "";
  } });
  return [h("button", { role: "menuitem", id: "open-trace", onclick: () => input.click() },
    h("strong", {}, "Open a TORCH_TRACE log ..."),
    h("span", {}, "the files a TORCH_TRACE=DIR run wrote to DIR, shown with the same views")), input];
}

// ---------------------------------------------------------------- comparing two results
// Another stored result (a share link's) beside this one: the pane menus list its compiles as
// "B ..." with its environment, so two runs (two environments, or before and after an edit)
// diff pane against pane. It stays until "Stop comparing" or a reload; ?compare=KEY opens it.
// `hint`: the toast once it is loaded.
export async function compareWith(panes, key,
  hint = "Compared result loaded: pick a “B …” compile in a pane, then “Diff: vs pane N”") {
  try {
    const { result } = await api.result(key);
    panes.setOther({ result, key });
    document.body.dataset.compare = key;
    document.getElementById("stop-compare").hidden = false;
    toast(hint, 5000);
  } catch (error) {
    toast(`Could not load the result to compare with: ${error.message}`, 8000);
  }
}

function stopComparing(panes) {
  panes.setOther(null);
  delete document.body.dataset.compare;
  document.getElementById("stop-compare").hidden = true;
}

// A share link (https://.../r/KEY) or its key alone.
const shareKey = (text) => text.trim().replace(/[?#].*$/, "").split("/").pop();

function compareItems(menu, panes) {
  const item = (id, title, help, onclick, hidden = false) => h("button", { role: "menuitem", id, hidden,
    onclick: () => { menu.hidden = true; onclick(); } }, h("strong", {}, title), h("span", {}, help));
  return [
    item("compare-with", "Compare with a share link ...", "its compiles join the pane menus as “B …”, to diff two runs",
         () => { const link = prompt("Share link (or key) of the result to compare with:"); if (link?.trim()) compareWith(panes, shareKey(link)); },
         Boolean(embedded)), // a static report has no server to ask
    item("stop-compare", "Stop comparing", "the pane menus list this run's compiles only", () => stopComparing(panes), true),
  ];
}
