// What the page says where a result has nothing to show: the script's error with its line, a
// run still going, or a run that compiled nothing. The panes and the run panel say it alike.

import { h, lineLink } from "./dom.js";

export const firstLine = (text) => String(text ?? "").split("\n").find((line) => line.trim()) ?? "";

// "SyntaxError at line 3", the line a link to the editor's line.
export function errorTitle(error, onLine) {
  return [h("strong", {}, error.type), error.line ? [" at ", lineLink(error.line, onLine)] : ""];
}

const errorWords = (error) => `${error.type}${error.line ? ` at line ${error.line}` : ""}`;

// Why a result has no compile (none yet, an error before any, or nothing compiled).
export function noCompile(result, onLine) {
  if (result.partial) return h("p", { class: "empty" }, "Waiting for the first compile ...");
  if (result.error) {
    return h("div", { class: "empty no-compile" }, "The script did not run to a compile: it ended with ",
      errorTitle(result.error, onLine), h("p", { class: "message" }, result.error.message));
  }
  return h("p", { class: "empty" }, "No compiles: the script called no compiled function " +
    "(torch.compile compiles a function when it is first called).");
}

// A result with compiles that ended with an error: one line above a pane's stage.
export function errorStrip(result, onLine) {
  const error = result?.partial ? null : result?.error;
  if (!error) return null;
  if (error.type === "Cancelled") { // the page stopped it: not the script's doing
    return h("div", { class: "pane-error", title: error.message },
      "■ The run was stopped before its end: the stages captured until then are shown");
  }
  return h("div", { class: "pane-error", title: error.message }, "⚠ The script ended with ",
    errorTitle(error, onLine), `: ${firstLine(error.message)}`);
}

// The Graph breaks tab without breaks.
export function noBreaks(result) {
  if (result.partial) return "No graph breaks so far.";
  const ended = result.error ? ` ended with ${errorWords(result.error)}` : null;
  if (!result.compiles?.length) {
    return `No graph breaks: the script ${ended ? `${ended.trim()} before it ran to a compile` : "compiled nothing"}.`;
  }
  if (ended) return `No graph breaks in the compiles that ran before the script${ended}.`;
  return "No graph breaks: every compiled function became whole graphs.";
}
