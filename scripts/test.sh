#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit tests and
# tutorials) with ctest. Usage: bash scripts/test.sh [BUILD_DIR] [cmake -D options...]
# LOOM_CTEST_ARGS: more ctest arguments, e.g. "-LE slow" or "-L unit" (labels
# in CMakeLists.txt). --timeout only limits a test without its own TIMEOUT
# (every registered test has one). Tests that exit 77 are reported as
# skipped (a CUDA test with nothing it could run), which ctest does not
# count as failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build}
shift || true
case "$dir" in /*) ;; *) dir="$root/$dir" ;; esac
bash "$root/scripts/setup-deps.sh"
bash "$root/scripts/build.sh" "$dir" "$@"
# shellcheck disable=SC2086 # the arguments are words on purpose
ctest --test-dir "$dir" --output-on-failure -j2 --timeout 900 ${LOOM_CTEST_ARGS:-}
