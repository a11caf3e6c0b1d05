#!/usr/bin/env bash
# The whole-model tuning benchmark (issue 32's tuned targets), one model on
# THREADS threads: tunes its tasks with `autotune --model --threads THREADS`
# into DB (TRIALS in all, resumable: a second call with a larger TRIALS
# continues), then compares Loom untuned and tuned against ONNX Runtime on
# THREADS threads with compare.sh (interleaved rounds). Records are kept
# per thread count (tune_threads_key), so one DB holds a 1-thread and a
# 2-thread tuning of a model side by side. Appends one CSV line to OUT:
# model,trials,tune_s,threads,ort_over_default,ort_over_tuned.
#   bench/models/tuned.sh MODEL TRIALS DB [OUT=bench/results/tuned.csv] [ROUNDS=3] [THREADS=1]
# Run it on a quiet host: the tuner times candidates while it compiles the
# next ones, and every other process moves those timings.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=$1; trials=$2; db=$3; out=${4:-$root/bench/results/tuned.csv}; rounds=${5:-3}; th=${6:-1}
name=$(basename "$model" .onnx)
[ -f "$out" ] || echo "model,trials,tune_s,threads,ort_over_default,ort_over_tuned" > "$out"
t0=$(date +%s)
"$root/build/autotune" --model "$model" --trials "$trials" --threads "$th" --db "$db" --resume \
    --progress-interval 60 | tee "$db.$th.log" | grep -vE "^  task [0-9]+:"
tune_s=$(( $(date +%s) - t0 ))
dflt=$("$root/bench/models/compare.sh" "$model" "$th" "$rounds" 20 | tail -1 | awk '{print $NF}')
tuned=$("$root/bench/models/compare.sh" "$model" "$th" "$rounds" 20 -- --db "$db" |
        tail -1 | awk '{print $NF}')
echo "$name: $th thread(s): ORT/Loom untuned $dflt, tuned $tuned"
echo "$name,$trials,$tune_s,$th,$dflt,$tuned" >> "$out"
