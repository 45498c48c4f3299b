#!/usr/bin/env bash
# Installs what torchbolt needs on a fresh Debian machine (idempotent; seconds when already done):
# Debian's graphviz (graph layout), chromium (browser tests), bubblewrap (the jobs' sandbox) and
# redis-server (scale-out, see README; the embedded default needs none), waiting for another
# apt's lock rather than failing at once;
# then this checkout's own virtualenv, .venv (torch 2.13.0, CPU build, ~1.2 GB, and the other
# requirements; reinstalled only when requirements.txt changes), with torchbolt itself installed
# editable there (`.venv/bin/torchbolt`): two checkouts never share a Python or a command.
# Then a second virtualenv with another torch (scripts/second_torch.sh), where test.sh runs the
# engine tests again: ~5.5 GB, outside the checkout so that checkouts share it, holding torch and
# the requirements only (the tests run this checkout's code from its folder); rebuilt only when
# its torch changes (a changed requirements.txt is installed into it). `--no-second-torch` (serve.sh) skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
debs=(graphviz chromium bubblewrap util-linux redis-server nodejs)  # nodejs: the page's unit tests
python3 -c "import ensurepip" 2>/dev/null || debs+=(python3-venv)  # Debian's Python splits it off
if ! command -v dot >/dev/null || [ ! -x /usr/bin/chromium ] || ! command -v bwrap >/dev/null \
    || ! command -v setpriv >/dev/null || ! command -v redis-server >/dev/null \
    || ! command -v node >/dev/null || [ "${#debs[@]}" -gt 6 ]; then
    sudo_=""; [ "$(id -u)" -eq 0 ] || sudo_="sudo"
    wait_lock=(-o DPkg::Lock::Timeout=600)  # another apt or unattended-upgrades may hold it
    $sudo_ apt-get "${wait_lock[@]}" update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_ apt-get "${wait_lock[@]}" install -y -qq "${debs[@]}" \
        >/dev/null
fi

# pip install into the venv of python $1: from this machine's package sources, else (a version
# they lack or cap) from the package index, without the machine's pip configuration.
pip_install() {
    local python="$1"; shift
    "$python" -m pip install -q --disable-pip-version-check "$@" 2>/dev/null && return
    echo "setup: not on this machine's package sources; from the package index: $*" >&2
    PIP_CONFIG_FILE=/dev/null PIP_CERT="${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}" \
        "$python" -m pip install -q --disable-pip-version-check "$@"
}

# Everything requirements.txt asks for except its own torch and triton (comments dropped).
others="$(grep -v -E '^(torch|triton)==' requirements.txt | sed -e 's/#.*//' -e '/^ *$/d')"

# A venv outside the checkout with torch $2 (and triton spec $3, may be empty) and the other
# requirements, shared by checkouts. Two stamps: a new torch rebuilds the venv; a changed
# requirement only installs into it.
torch_venv() {
    local venv="$1" torch="$2" triton="$3"
    local stamp="$venv/.torchbolt-installed" want="torch==$torch ${triton:+triton$triton }numpy"
    local others_stamp="$venv/.torchbolt-requirements"
    local others_want; others_want="$(echo "$others" | sha256sum | cut -c1-16)"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        echo "setup: building $venv (torch $torch; a few minutes, once)" >&2
        rm -rf "$venv"
        python3 -m venv "$venv"
        pip_install "$venv/bin/python" $want
        echo "$want" > "$stamp"
    fi
    if [ "$(cat "$others_stamp" 2>/dev/null)" != "$others_want" ]; then
        pip_install "$venv/bin/python" "torch==$torch" -r <(echo "$others")
        echo "$others_want" > "$others_stamp"
    fi
    # Shared by checkouts: no checkout's torchbolt is installed there (an older set-up did).
    if [ -n "$(ls "$venv"/lib/python3*/site-packages/ | grep -i '^__editable__.*torchbolt\|^torchbolt' || true)" ]; then
        "$venv/bin/pip" uninstall -q -y torchbolt
    fi
}

if [ "${1:-}" = "--torch" ]; then
    venv="${XDG_CACHE_HOME:-$HOME/.cache}/torchbolt/venv-torch-${2:?--torch VERSION}"
    . scripts/second_torch.sh  # the same venv as CI's second torch, where the version is its
    [ "$2" = "$SECOND_TORCH" ] && triton="$SECOND_TRITON" || triton=""
    torch_venv "$venv" "$2" "$triton" >&2
    echo "$venv/bin/python"
    exit 0
fi

. scripts/project_venv.sh
stamp="$PROJECT_VENV/.torchbolt-installed"
want="$(sha256sum requirements.txt pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -x "$PROJECT_PYTHON" ]; then
    echo "setup: building $PROJECT_VENV (torch and the requirements: ~3 GB downloaded, a few minutes, once)" >&2
    python3 -m venv "$PROJECT_VENV"
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    pip_install "$PROJECT_PYTHON" -r requirements.txt
    "$PROJECT_PYTHON" -m pip install -q --disable-pip-version-check --no-deps \
        --no-build-isolation -e .
    echo "$want" > "$stamp"
fi

[ "${1:-}" = "--no-second-torch" ] && exit 0
. scripts/second_torch.sh
torch_venv "$SECOND_TORCH_VENV" "$SECOND_TORCH" "$SECOND_TRITON"
