#!/usr/bin/env bash
# Installs what torchbolt needs (scripts/setup.sh, without the second torch), then starts the web
# explorer on http://127.0.0.1:8000 from this checkout's venv; arguments go to the server.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --no-second-torch
. scripts/project_venv.sh
exec "$PROJECT_PYTHON" -m app "$@"
