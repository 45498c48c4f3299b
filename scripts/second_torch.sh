# Sourced by setup.sh and test.sh (and read by tests/test_torch_versions.py): the second torch
# that CI runs the engine tests under, in a virtualenv of its own outside the checkout (so a
# fresh clone on the same machine reuses it): the oldest torch this machine installs from local
# disk (the CPU build). See README, "Adding a torch version".
SECOND_TORCH=2.13.0
SECOND_TRITON="==3.8.0"  # what the 2.13 environment ran with (the CPU build asks for none)
SECOND_TORCH_VENV="${TORCHBOLT_SECOND_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/torchbolt/venv-torch-$SECOND_TORCH}"
