#!/usr/bin/env bash
# Creates (or updates) the Python venv used by scripts/models/*.py and bench/models/ort_bench.py,
# outside the repository so that build trees and git stay clean. Prints the venv's python.
#   LOOM_VENV  venv directory (default: $HOME/.cache/loom-venv)
#   PYTHON     interpreter used to create it (default: python3)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${LOOM_VENV:-$HOME/.cache/loom-venv}"
py="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv" >&2
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip >&2
"$venv/bin/python" -m pip install --quiet -r "$here/requirements.txt" >&2
echo "$venv/bin/python"
