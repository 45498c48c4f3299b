#!/usr/bin/env bash
# Installs what torchbolt needs on a fresh Debian machine (idempotent; fast when already done).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -r requirements.txt
