// The page's views: the catalogue names each stage's view (a Stage's `view` on the server) and,
// for some, a panel beside its text (`panel`); this map gives their renderers. A view is
// {tabs(artifact): [[mode, label], ...], render(pane, ctx, mode)}, and `run: true` where it shows
// the whole run (it needs no compile). Adding a view: a module here and its line below.

import { bytecodeView } from "./bytecode.js";
import { fxView } from "./fx.js";
import { guardsView } from "./guards.js";
import { kernelsView } from "./kernels.js";
import { textView } from "./text.js";
import { timingsView } from "./timings.js";
import { aotiTable } from "../programs.js";
import { renderSaved } from "../saved.js";

const VIEWS = { text: textView, fx: fxView, guards: guardsView, bytecode: bytecodeView,
                kernels: kernelsView, timings: timingsView };
// A panel beside the text, (compile, onUserLine) -> an element or null; or above it, (entry) -> ...
const PANELS = { saved: { beside: renderSaved }, aoti: { above: aotiTable } };

// The view that lists a compile's kernels: a graph node's kernel opens its stage (panes.js).
export const KERNEL_VIEW = Object.keys(VIEWS).find((name) => VIEWS[name] === kernelsView);
// A view the page does not know (a newer server's) shows the stage as text.
export const viewNamed = (name) => VIEWS[name] ?? textView;
export const panelNamed = (name) => PANELS[name] ?? null;
// Every tab any view offers (a share link's view is one of these).
export const MODES = new Set(Object.values(VIEWS).flatMap((view) => view.modes));
