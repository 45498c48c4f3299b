#!/usr/bin/env bash
# The whole test suite: installs what it needs, then runs pytest (exit 5, no tests, fails too).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
python3 -m pytest tests -q -p no:cacheprovider "$@"
