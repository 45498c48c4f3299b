#!/usr/bin/env bash
# Installs what torchbolt needs on a fresh Debian machine (idempotent; fast when already done):
# Debian's graphviz (graph layout), chromium (browser tests), bubblewrap (the jobs' sandbox) and
# redis-server (scale-out, see README; the embedded default needs none),
# then the Python packages, and torchbolt itself as an editable install (the `torchbolt`
# command; tests and benchmarks import the packages from this tree).
# Then a second virtualenv with another torch (scripts/second_torch.sh), where test.sh runs the
# engine tests again; it is rebuilt only when its torch or requirements.txt change.
# `--no-second-torch` (serve.sh) skips it.
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

[ "${1:-}" = "--no-second-torch" ] && exit 0
. scripts/second_torch.sh
# Everything requirements.txt asks for except its own torch and triton (comments dropped).
others="$(grep -v -E '^(torch|triton)==' requirements.txt | sed -e 's/#.*//' -e '/^ *$/d')"
stamp="$SECOND_TORCH_VENV/.torchbolt-installed"
want="torch==$SECOND_TORCH triton$SECOND_TRITON numpy $(echo "$others" | sha256sum | cut -c1-16)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "setup: building $SECOND_TORCH_VENV (torch $SECOND_TORCH; a few minutes, once)" >&2
    rm -rf "$SECOND_TORCH_VENV"
    python3 -m venv "$SECOND_TORCH_VENV"
    "$SECOND_TORCH_VENV/bin/pip" install -q "torch==$SECOND_TORCH" "triton$SECOND_TRITON" numpy \
        -r <(echo "$others")
    echo "$want" > "$stamp"
fi
# This checkout's torchbolt (its `torchbolt` command) in that venv too: a fresh clone's own.
"$SECOND_TORCH_VENV/bin/pip" install -q --no-deps --no-build-isolation -e .
