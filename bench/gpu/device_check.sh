#!/usr/bin/env bash
# One full pass on the GPU machine (bench/README.md; the libraries a build made elsewhere needs come
# from bench/gpu/fetch-runtime-debs.sh): every test and tutorial of a carried build, optional tuning,
# then the side-by-side benchmark against cuBLAS/cuDNN. Run from the project root as
#   source .devdeps/unpack-runtime-debs.sh && bash bench/gpu/device_check.sh build-dev "$OUT" [STEPS]
# STEPS: a comma list of tests,tutorials,tune,bench (default all four, run in that order; tune:
# `autotune --target cuda` of the workloads in $TUNE, then bench uses that database).
# BENCH_ARGS: more arguments of bench_gpu.py (e.g. --only r50_c3,mm4096). TESTS: a regex (grep -E)
# of the test programs to run (default all; e.g. 'cuda|gpu|half|xreduce' for the GPU's own). Logs and CSVs go to OUT; the
# exit status is the number of failed tests and tutorials (the benchmark's failures are in its log).
set -u
build=${1:?build dir}
out=${2:?output dir}
steps=${3:-tests,tutorials,tune,bench}
export LD_LIBRARY_PATH="$PWD/$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$out"
nvidia-smi -L | tee "$out/summary.txt"
failed=0

run_one() {  # name, command...: a line PASS/FAIL with seconds, the output kept on failure
    local name=$1; shift
    local t0=$(date +%s.%N) log
    log=$(timeout 300 "$@" 2>&1); local rc=$?
    local t=$(awk "BEGIN{print $(date +%s.%N) - $t0}")
    if [ $rc -eq 0 ]; then
        printf 'PASS %-34s %6.1f s\n' "$name" "$t"
    else
        printf 'FAIL %-34s %6.1f s (exit %d)\n' "$name" "$t" "$rc"
    fi
    printf '=== %s (exit %d)\n%s\n' "$name" "$rc" "$log" >> "$out/detail-$name.log"
    return $rc
}
export -f run_one
export out

if [[ $steps == *tests* ]]; then
    # programs only: names with no dot (not logs), the directory's own path may have one
    ls "$build" | grep '^test_' | grep -v '\.' | grep -E "${TESTS:-.}" |
        xargs -P 8 -I{} bash -c "run_one {} '$build/{}'" \
        > "$out/tests.txt"
    sort -o "$out/tests.txt" "$out/tests.txt"
    cat "$out/tests.txt" >> "$out/summary.txt"
    failed=$((failed + $(grep -c ^FAIL "$out/tests.txt")))
    # The skipped lines tell whether the CUDA tests really ran on the device.
    grep -h -i 'skip' "$out"/detail-test_*.log | sort | uniq -c >> "$out/summary.txt"
    cat "$out"/detail-test_*.log > "$out/tests-detail.log"
fi
if [[ $steps == *tutorials* ]]; then
    for t in 04_matmul_cuda 05_conv2d_cuda; do
        run_one "tutorial_${t}_check" "$build/tutorial_$t" --check >> "$out/summary.txt" || failed=$((failed + 1))
    done
    run_one tutorial_04_matmul_cuda_4096 "$build/tutorial_04_matmul_cuda" 4096 >> "$out/summary.txt" || failed=$((failed + 1))
    run_one tutorial_05_conv2d_cuda "$build/tutorial_05_conv2d_cuda" >> "$out/summary.txt" || failed=$((failed + 1))
    cat "$out"/detail-tutorial_*.log > "$out/tutorials.log"
fi
rm -f "$out"/detail-*.log
if [[ $steps == *tune* ]]; then
    # TUNE: "name:trials:seconds ..." of bench/workloads.tsv (or TUNE_WORKLOADS), into OUT/cuda.db
    for spec in ${TUNE:-r50_c3:64:150}; do
        IFS=: read -r name trials secs <<< "$spec"
        IFS=$'\t' read -r _ op shape < <(grep -P "^$name\t" "${TUNE_WORKLOADS:-bench/workloads.tsv}")
        echo "== $name ($op $shape), $trials trials" >> "$out/tune.log"
        timeout -s INT -k 30 "$secs" "$build/autotune" --op "$op" --shape "$shape" --target cuda --trials "$trials" \
            --db "$out/cuda.db" --progress-interval 20 >> "$out/tune.log" 2>&1
        echo "autotune $name exit $?" >> "$out/summary.txt"
    done
    grep -E '^(==|best|time|re-timed)' "$out/tune.log" >> "$out/summary.txt"
    BENCH_ARGS="--db $out/cuda.db ${BENCH_ARGS:-}"
fi
if [[ $steps == *bench* ]]; then
    PYTHONUNBUFFERED=1 timeout 400 python3 bench/gpu/bench_gpu.py --bench-cuda "$build/bench/bench_cuda" \
        --out "$out/gpu.csv" ${BENCH_ARGS:-} > "$out/bench.log" 2>&1
    echo "bench_gpu exit $?" >> "$out/summary.txt"
    cat "$out/bench.log" >> "$out/summary.txt"
fi
cat "$out/summary.txt"
exit $failed
