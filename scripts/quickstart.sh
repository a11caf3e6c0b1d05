#!/usr/bin/env bash
# A fresh machine's first command: installs what is missing, builds Loom,
# and runs the main job on real input — the matmul tutorial (1024^3 float32,
# naive -> tiled -> vectorized -> packed -> parallel, checked against a
# double-precision reference, with GFLOP/s per step).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/setup-deps.sh"
bash "$root/scripts/build.sh" build
"$root/build/tutorial_02_matmul_schedule"
