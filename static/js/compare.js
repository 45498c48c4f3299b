// Two panes as a diff (a pane's "Diff" menu names the other pane), and one click for "this
// compile vs the one it replaced": the first pane shows the old compile, the second the new
// one, same stage, as text, diffed. Changed lines are marked in both panes (diff.js pairs the
// lines; FX node renames are not changes). Two runs (an environment comparison, menu.js's
// compareWith) diff the same way: a compile of this run beside the same compile of the other.

import { h, clear } from "./dom.js";
import { markRows, scrollToLine } from "./editor.js";
import { diffLines } from "./diff.js";
import { isGraphStage } from "./stages.js";

// The compile whose cache entry `id` replaced (its recompile's first reason: the newest entry).
export function previousOf(result, id) {
  return (result?.recompiles ?? []).find((r) => r.compile_id === id && r.previous)?.previous ?? null;
}

export function diffSelect(panes, pane) {
  const select = h("select", { class: "pane-diff", "aria-label": "Diff with another pane",
                               title: "Show this pane and another one as a diff (changed lines marked)",
                               onchange: () => setDiff(panes, pane, select.value === "" ? null : Number(select.value)) });
  return select;
}

// The pane this one is diffed with: the one it names, or one that names it.
const partnerOf = (panes, pane) => panes.panes[pane.state.diff ?? -1]
  ?? panes.panes.find((p) => p !== pane && p.state.diff === pane.index) ?? null;

export function renderDiffSelect(panes, pane) {
  const options = [["", "Diff: off"], ...panes.panes.filter((p) => p !== pane)
    .map((p) => [String(p.index), `Diff: vs pane ${p.index + 1}`])];
  const partner = String(partnerOf(panes, pane)?.index ?? "");
  clear(pane.diffSelect, options.map(([value, label]) => h("option", { value, selected: value === partner }, label)));
}

function setDiff(panes, pane, partner) {
  const { store } = panes;
  for (const p of panes.panes) if (p.state.diff === pane.index) store.setPane(p.index, { diff: null });
  store.setPane(pane.index, partner == null ? { diff: null } : { diff: partner, view: "text" });
  // one pair per two panes: the other side follows this one
  if (partner != null) store.setPane(partner, { view: "text", diff: null });
  panes.render();
}

export function compareWithPrevious(panes, id, stage, previous = previousOf(panes.result, id)) {
  if (!previous || panes.panes.length < 2) return;
  panes.store.setPane(0, { compile: previous, stage, view: "text", diff: null });
  panes.store.setPane(1, { compile: id, stage, view: "text", diff: 0 });
  panes.render();
}

// The same compile in the other run: "0/0" <-> "B 0/0" (programs.js's ids of a compared result).
const counterpart = (id) => (id.startsWith("B ") ? id.slice(2) : `B ${id}`);

// This run's first compile beside the same compile of the compared run (panes.other), in the
// first two panes, at `stage`, diffed.
export function diffRuns(panes, stage = "dynamo_graph") {
  const id = panes.other?.result.compiles?.[0]?.id;
  if (!id) return;
  if (panes.panes.length < 2) panes.setCount(2);
  panes.store.setPane(0, { compile: id, stage, view: "text", diff: null });
  panes.store.setPane(1, { compile: counterpart(id), stage, view: "text", diff: 0 });
  panes.render();
}

// A pane diffed with the same compile of the other run takes its partner along when it picks
// another stage, view or compile (call before applying `change`), so each stage diffs in one pick.
export function followPartner(panes, pane, change) {
  const partner = partnerOf(panes, pane);
  const paired = partner && panes.other && pane.state.compile
    && partner.state.compile === counterpart(pane.state.compile);
  if (!paired) return;
  if (change.stage) panes.store.setPane(partner.index, { stage: change.stage, view: null });
  if (change.view) panes.store.setPane(partner.index, { view: change.view });
  if (change.compile) panes.store.setPane(partner.index, { compile: counterpart(change.compile) });
}

function sideText(pane) {
  return pane.viewer ? pane.text() : null;
}

// Mark the changed lines of every pane pair; recomputed only when either pane re-rendered.
export function applyDiffs(panes) {
  const pairs = new Map(); // pane -> [partner, "old" | "new"]
  for (const pane of panes.panes) {
    const partner = panes.panes[pane.state.diff ?? -1];
    if (partner && partner !== pane && !pairs.has(pane) && !pairs.has(partner)) {
      pairs.set(partner, [pane, "old"]);
      pairs.set(pane, [partner, "new"]);
    }
  }
  for (const pane of panes.panes) {
    const [partner, side] = pairs.get(pane) ?? [null, null];
    const key = partner ? `${side}|${pane.renderedKey}|${partner.renderedKey}` : null;
    if (key === pane.diffKey) continue;
    pane.diffKey = key;
    const [own, other] = [sideText(pane), partner && sideText(partner)];
    const shown = own != null && other != null;
    const fx = shown && isGraphStage(pane.el.dataset.stage) && isGraphStage(partner.el.dataset.stage);
    const diff = shown ? (side === "old" ? diffLines(own, other, { fx }) : diffLines(other, own, { fx })) : null;
    const changed = diff ? diff[side === "old" ? "left" : "right"] : new Set();
    if (pane.viewer) markRows(pane.viewer, "diff", changed, `tb-diff-${side}`);
    // The first change in view, unless the pane shows a failed guard (panes.js scrolled to it).
    if (pane.viewer && changed.size && !pane.failedShown) scrollToLine(pane.viewer, Math.min(...changed));
    pane.el.dataset.diff = diff ? side : "";
    clear(pane.diffInfo, !partner ? "" : !diff ? "diff: text views only" : summary(diff, side, fx));
    pane.diffInfo.title = !partner ? "" : diff ? `Marked: lines ${side === "old" ? "removed or changed"
      : "added or changed"} against pane ${partner.index + 1}${fx ? "; lines that differ only by FX node names are not marked" : ""}`
      : `The diff with pane ${partner.index + 1} is marked in the text views (Code, Text, Tree)`;
  }
}

function summary(diff, side, fx) {
  const changed = diff[side === "old" ? "left" : "right"].size;
  return `${changed} changed${fx && diff.renamed ? `, ${diff.renamed} renamed` : ""}`;
}
