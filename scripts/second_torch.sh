# Sourced by setup.sh and test.sh (and read by tests/test_torch_versions.py): the second torch
# that CI runs the engine tests under, in a virtualenv of its own outside the checkout (so a
# fresh clone on the same machine reuses it). See README, "Adding a torch version".
SECOND_TORCH=2.14.1
SECOND_TRITON="~=3.8.0"  # the pin torch 2.14.1's own metadata asks for
SECOND_TORCH_VENV="${TORCHBOLT_SECOND_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/torchbolt/venv-torch-$SECOND_TORCH}"
