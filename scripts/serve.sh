#!/usr/bin/env bash
# Installs what torchbolt needs, then starts the web explorer on http://127.0.0.1:8000.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --no-second-torch
exec python3 -m app "$@"
