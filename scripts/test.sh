#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit tests and
# tutorials) with ctest. Usage: bash scripts/test.sh [BUILD_DIR] [cmake -D options...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build}
shift || true
case "$dir" in /*) ;; *) dir="$root/$dir" ;; esac
bash "$root/scripts/setup-deps.sh"
bash "$root/scripts/build.sh" "$dir" "$@"
ctest --test-dir "$dir" --output-on-failure -j2 --timeout 900
