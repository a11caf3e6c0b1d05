#!/usr/bin/env bash
# Loom against ONNX Runtime on one model, interleaved: ROUNDS rounds, each
# timing ORT (bench/models/ort_bench.py) then Loom (loomrun --bench) with
# RUNS runs after warm-up, on THREADS threads; prints each round's medians
# and the median of the rounds' ratios (ORT ms / Loom ms: Loom's throughput
# relative to ORT's). Loom's outputs are checked against ORT's first.
#   bench/models/compare.sh MODEL [THREADS=1] [ROUNDS=3] [RUNS=20] [-- loomrun options]
# With TVM_DIR set (a work directory bench/models/tvm_relax.py tuned into;
# TVM_PY its venv's python, TVM_ARGS e.g. --prepack as it was tuned), each
# round also times TVM's module built from that directory's records, and
# the summary adds the median of ORT ms / TVM ms.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=$1; threads=${2:-1}; rounds=${3:-3}; runs=${4:-20}
shift $(( $# < 4 ? $# : 4 )); [ "${1:-}" = "--" ] && shift
py=${LOOM_PY:-${LOOM_VENV:-$HOME/.cache/loom-venv}/bin/python}
io=$(mktemp -d); trap 'rm -rf "$io"' EXIT
"$py" "$root/bench/models/ort_bench.py" --model "$model" --threads "$threads" --runs 3 \
    --warmup 1 --save-io "$io" > /dev/null
# A deep network with random weights may put a few outputs near zero past the check's
# rtol 1e-3 / atol 1e-5 (float32 rounding, not a wrong answer): say so and time it anyway.
"$root/build/loomrun" "$model" --threads "$threads" --check "$io" "$@" | grep -E "^(compiled|check)" ||
    echo "compare.sh: some outputs differ from ORT's beyond the check's tolerance (max abs diff above)"
ratios=(); tvm_ratios=()
for r in $(seq "$rounds"); do
    ort=$("$py" "$root/bench/models/ort_bench.py" --model "$model" --threads "$threads" \
          --runs "$runs" --warmup 3 | sed -E 's/.*"median_ms": ([0-9.]+).*/\1/')
    loom=$("$root/build/loomrun" "$model" --threads "$threads" --bench "$runs" --warmup 3 "$@" |
           sed -nE 's/.*median ([0-9.]+) ms.*/\1/p')
    ratio=$(awk -v a="$ort" -v b="$loom" 'BEGIN { printf "%.3f", a / b }')
    ratios+=("$ratio")
    if [ -n "${TVM_DIR:-}" ]; then
        # shellcheck disable=SC2086 # TVM_ARGS is a list of options
        tvm=$("${TVM_PY:-python3}" "$root/bench/models/tvm_relax.py" --model "$model" --trials 0 \
              --work-dir "$TVM_DIR" --threads "$threads" --runs "$runs" --warmup 3 \
              ${TVM_ARGS:-} 2>/dev/null | tail -1 | sed -E 's/.*"median_ms": ([0-9.]+).*/\1/')
        tvm_ratios+=("$(awk -v a="$ort" -v b="$tvm" 'BEGIN { printf "%.3f", a / b }')")
        echo "round $r: ORT $ort ms, Loom $loom ms, TVM $tvm ms, ORT/Loom $ratio, ORT/TVM ${tvm_ratios[-1]}"
    else
        echo "round $r: ORT $ort ms, Loom $loom ms, ORT/Loom $ratio"
    fi
done
if [ -n "${TVM_DIR:-}" ]; then
    printf '%s\n' "${tvm_ratios[@]}" | sort -n | awk '{ a[NR] = $1 } END { printf "median ORT/TVM over %d rounds: %s\n", NR, a[int((NR + 1) / 2)] }'
fi
printf '%s\n' "${ratios[@]}" | sort -n | awk '{ a[NR] = $1 } END { printf "median ORT/Loom over %d rounds: %s\n", NR, a[int((NR + 1) / 2)] }'
