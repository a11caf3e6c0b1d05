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
    if ! "$py" -m venv "$venv" >&2; then
        echo "setup.sh: could not create a venv at '$venv' with '$py'" \
             "(Debian/Ubuntu: apt-get install python3-venv; or set PYTHON)" >&2
        exit 1
    fi
fi
if ! "$venv/bin/python" -m pip install --quiet -r "$here/requirements.txt" >&2; then
    echo "setup.sh: pip could not install $here/requirements.txt into '$venv'" >&2
    exit 1
fi
echo "$venv/bin/python"
