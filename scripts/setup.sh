#!/usr/bin/env bash
# Installs what torchbolt needs on a fresh Debian machine (idempotent; fast when already done):
# Debian's graphviz (graph layout), chromium (browser tests), bubblewrap (the jobs' sandbox) and
# redis-server (scale-out, see README; the embedded default needs none),
# then the Python packages, and torchbolt itself as an editable install (the `torchbolt`
# command; tests and benchmarks import the packages from this tree).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v dot >/dev/null || [ ! -x /usr/bin/chromium ] || ! command -v bwrap >/dev/null \
    || ! command -v setpriv >/dev/null || ! command -v redis-server >/dev/null; then
    sudo_=""; [ "$(id -u)" -eq 0 ] || sudo_="sudo"
    $sudo_ apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq graphviz chromium bubblewrap util-linux \
        redis-server >/dev/null
fi
python3 -m pip install -q -r requirements.txt
python3 -m pip install -q --no-deps --no-build-isolation -e .
