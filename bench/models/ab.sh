#!/usr/bin/env bash
# ONNX Runtime and two Loom builds on one model, interleaved: ROUNDS rounds, each timing ORT
# (bench/models/ort_bench.py), BASE's loomrun and this tree's build/loomrun, each the median of
# RUNS runs after 3 warm-ups on THREADS threads; one line a round with the three medians (ms) and
# ORT ms / Loom ms for both builds (above 1: Loom faster). For "what did this change do against
# the peer": build the other commit aside (a git worktree) and point BASE at its loomrun.
#   BASE=/tmp/base/build/loomrun bench/models/ab.sh MODEL [THREADS=1] [ROUNDS=3] [RUNS=20]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=$1; threads=${2:-1}; rounds=${3:-3}; runs=${4:-20}
base=${BASE:?set BASE to the loomrun of the other build}
py=${LOOM_PY:-${LOOM_VENV:-$HOME/.cache/loom-venv}/bin/python}
median() { sed -nE 's/.*median ([0-9.]+) ms.*/\1/p'; }
for r in $(seq "$rounds"); do
    o=$("$py" "$root/bench/models/ort_bench.py" --model "$model" --threads "$threads" --runs "$runs" \
        --warmup 3 | sed -E 's/.*"median_ms": ([0-9.]+).*/\1/')
    b=$("$base" "$model" --threads "$threads" --bench "$runs" --warmup 3 | median)
    n=$("$root/build/loomrun" "$model" --threads "$threads" --bench "$runs" --warmup 3 | median)
    echo "$(basename "$model" .onnx) t$threads round $r: ORT $o base $b new $n" \
         "ORT/base $(awk -v a="$o" -v b="$b" 'BEGIN { printf "%.3f", a / b }')" \
         "ORT/new $(awk -v a="$o" -v b="$n" 'BEGIN { printf "%.3f", a / b }')"
done
