#!/usr/bin/env bash
# A fresh machine's first command: installs what is missing, builds Loom,
# and runs the main job on real input — the autotuner on a 1024^3 float32
# matmul (32 measured trials, a few minutes on two cores), every record stored in
# build/tuning.db — then shows the best record the database keeps, and runs a
# committed ONNX model against ONNX Runtime's output.
# Set TRIALS to change the budget.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/setup-deps.sh"
bash "$root/scripts/build.sh" build
shape="M=1024,N=1024,K=1024"
"$root/build/autotune" --op matmul --shape "$shape" --target llvm --trials "${TRIALS:-32}" \
    --db "$root/build/tuning.db" --resume
# The database keeps the winner for this CPU; programs fetch it with tdb_apply_best.
"$root/build/tunedb" --db "$root/build/tuning.db" best --op matmul --shape "$shape"
# A whole model: the committed small CNN compiled (fused kernels, default
# schedules), run and checked against ONNX Runtime's output for its input.
"$root/build/loomrun" "$root/tests/data/cnn_small/model.onnx" \
    --check "$root/tests/data/cnn_small/test_data_set_0" --bench 20
