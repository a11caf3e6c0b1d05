#!/usr/bin/env bash
# The whole-model tuning benchmark (issue 32's tuned targets), one model:
# tunes its tasks with `autotune --model` into DB (TRIALS in all, 1 thread,
# resumable: a second call with a larger TRIALS continues), then compares
# Loom untuned and tuned against ONNX Runtime on 1 and 2 threads with
# compare.sh (interleaved rounds). Appends one CSV line per thread count to
# OUT: model,trials,tune_s,threads,ort_over_default,ort_over_tuned.
#   bench/models/tuned.sh MODEL TRIALS DB [OUT=bench/results/tuned.csv] [ROUNDS=3]
# Run it on a quiet host: the tuner times candidates on one core while the
# other compiles, and every other process moves those timings.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=$1; trials=$2; db=$3; out=${4:-$root/bench/results/tuned.csv}; rounds=${5:-3}
name=$(basename "$model" .onnx)
[ -f "$out" ] || echo "model,trials,tune_s,threads,ort_over_default,ort_over_tuned" > "$out"
t0=$(date +%s)
"$root/build/autotune" --model "$model" --trials "$trials" --threads 1 --db "$db" --resume \
    --progress-interval 60 | tee "$db.log" | grep -vE "^  task [0-9]+:"
tune_s=$(( $(date +%s) - t0 ))
for th in 1 2; do
    dflt=$("$root/bench/models/compare.sh" "$model" "$th" "$rounds" 20 | tail -1 | awk '{print $NF}')
    tuned=$("$root/bench/models/compare.sh" "$model" "$th" "$rounds" 20 -- --db "$db" |
            tail -1 | awk '{print $NF}')
    echo "$name: $th thread(s): ORT/Loom untuned $dflt, tuned $tuned"
    echo "$name,$trials,$tune_s,$th,$dflt,$tuned" >> "$out"
done
