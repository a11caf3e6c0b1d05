#!/usr/bin/env bash
# Configures and builds Loom into a build directory (default: build).
# Usage: bash scripts/build.sh [BUILD_DIR] [extra cmake -D options...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build}
shift || true
case "$dir" in /*) ;; *) dir="$root/$dir" ;; esac
cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DLOOM_WERROR=ON "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
