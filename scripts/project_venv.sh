# Sourced by setup.sh, serve.sh and test.sh: this checkout's own virtualenv (git-ignored).
PROJECT_VENV="$(pwd)/.venv"
PROJECT_PYTHON="$PROJECT_VENV/bin/python"
