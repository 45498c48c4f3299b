// The environment picker ("torch 2.13, CPU" / "torch 2.11, NVIDIA H200"): shown when the
// connected workers offer more than one environment (GET /api/status `environments`), or when
// one is unavailable (`unavailable`: its start-up probe failed), listed with why and not
// selectable; the choice goes with each submit, and each result records the environment it ran in.
// Beside it, "⇆ Both" runs the code in the chosen environment and in another one, and diffs
// the two runs pane against pane (main.js's compareEnvironments, compare.js's diffRuns).

import { api } from "./api.js";
import { h } from "./dom.js";

export const environmentLabel = (env) => `torch ${env.torch}, ${env.device === "cpu" ? "CPU" : env.device_name}`;
let picker = null;
let environments = [];

export const chosenEnvironment = () => picker?.value || undefined;

// The environment compared with the chosen one: the next one listed.
export function otherEnvironment() {
  const index = environments.findIndex((env) => env.id === picker?.value);
  return environments[(index + 1) % environments.length];
}

// An unavailable environment's entry (its probe told nothing of its torch or device): the Python
// its workers run, by its venv's folder (…/NAME/bin/python; the whole path on hover), and the
// probe's error, cut to fit the menu.
function unavailableOption({ python, error }) {
  const name = /([^/]+)\/bin\/[^/]+$/.exec(python ?? "")?.[1] ?? python ?? "an environment";
  const why = error.length > 70 ? `${error.slice(0, 69)}…` : error;
  return h("option", { value: "", disabled: true,
                       title: `${python}: unavailable, its start-up probe failed: ${error}` },
    `⚠ ${name} unavailable: ${why}`);
}

// `onCompare()`: "⇆ Both" was pressed (offered with two environments or more).
export async function mountEnvironmentPicker(before, { onCompare }) {
  let unavailable;
  ({ environments = [], unavailable = [] } = await api.status().catch(() => ({})));
  if (environments.length < 2 && !unavailable.length) return;
  picker = h("select", { id: "environment", "aria-label": "Environment",
                         title: "Where the code runs (worker hosts connected now)" },
    environments.map((env) => h("option", { value: env.id },
      `${environmentLabel(env)} (${env.workers} worker${env.workers > 1 ? "s" : ""})`)),
    unavailable.map(unavailableOption));
  const both = environments.length > 1 ? h("button", { id: "compare-environments", onclick: onCompare,
    title: "Run this code in the chosen environment and in the next one, then diff each stage of the "
           + "two runs pane against pane" }, "⇆ Both") : "";
  before.before(picker, both);
}

// The key of the stored result of `source` run in `environment`, once its job has ended.
export async function runIn(environment, source, options, pollMs = 1000) {
  const { handle } = await api.compile(source, options, environment.id);
  for (;;) {
    const data = await api.handle(handle);
    if (data.status === "done" || data.status === "failed") {
      if (!data.key) throw new Error(`the run in ${environmentLabel(environment)} kept no result`);
      return data.key;
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
