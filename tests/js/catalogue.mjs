// The engine's catalogue as the page gets it (GET /api/catalogue), from the project's Python
// (PROJECT_PYTHON, else the checkout's .venv): the stage tests run on the real stage list.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const python = process.env.PROJECT_PYTHON ?? `${root}.venv/bin/python`;

export const catalogue = JSON.parse(execFileSync(python, ["-c",
  "import json; from compiler_core import catalogue; print(json.dumps(catalogue()))"], { cwd: root }));
