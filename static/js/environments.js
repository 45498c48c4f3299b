// The environment picker ("torch 2.13, CPU" / "torch 2.11, NVIDIA H200"): shown only when the
// connected workers offer more than one environment (GET /api/status `environments`); the
// choice goes with each submit, and each result records the environment it ran in.

import { api } from "./api.js";
import { h } from "./dom.js";

export const environmentLabel = (env) => `torch ${env.torch}, ${env.device === "cpu" ? "CPU" : env.device_name}`;
let picker = null;

export const chosenEnvironment = () => picker?.value || undefined;

export async function mountEnvironmentPicker(before) {
  const { environments = [] } = await api.status().catch(() => ({}));
  if (environments.length < 2) return;
  picker = h("select", { id: "environment", "aria-label": "Environment",
                         title: "Where the code runs (worker hosts connected now)" },
    environments.map((env) => h("option", { value: env.id },
      `${environmentLabel(env)} (${env.workers} worker${env.workers > 1 ? "s" : ""})`)));
  before.before(picker);
}
