#!/usr/bin/env bash
# One call on the GPU machine for the tensor-core work (issue 34; bench/README.md): the GPU tests, the
# tensor-core and CUDA-core GEMM knob sweeps, Loom's defaults (and TUNE's tuned records) against
# cuBLAS/cuDNN in the same call, Triton's autotuned float16 matmul, then MPI_SCALING (a command, issue
# 33) if set. At most 8 files come back from the device tool, so OUT gets exactly these:
#   summary.txt  tests, tutorials and each step's closing lines (a failing test's log tail too)
#   sweep.csv    bench_tc_gemm      gemm.csv  bench_cuda_gemm, then bench_tc_conv (each checked)
#   gpu.csv      bench_gpu.py rows  peers.csv peers_tc.py      tune.log  autotune's output
#   mpi.csv, mpi.log (from MPI_SCALING, a command that sees OUT as $out, e.g.
#   'source .devdeps/mpi/unpack-mpi.sh && bash bench/mpi/scaling.sh "$out" 20')
# From the project root, after `source .devdeps/unpack-runtime-debs.sh`:
# STEPS=wgmma instead of sweeps: the wgmma template's layout probe (bench_tc_probe, to summary.txt)
# and its knob sweep (bench_tc_gemm --wgmma-config, with WMMA's defaults beside it) in sweep.csv.
# STEPS=...,layouts,...: the probe on the stored layouts and tf32 wgmma takes since session 54
# (A [K, M], B [N, K], both; float32 as tf32), each wrong element's source to summary.txt.
#   TUNE="mm4096_f16:64:90 ..." [TUNE_ARGS="--retime 0"] [STEPS=tests,sweeps,tune,bench,mpi] \
#       bash bench/gpu/tc_pass.sh BUILD OUT
set -u
build=${1:?build dir}
out=${2:?output dir}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
step() { echo "== $1 ($(date +%T))" >> "$out/summary.txt"; }
tmp=$(mktemp -d)

steps=${STEPS:-tests,sweeps,tune,bench,mpi}
if [[ $steps == *tests* ]]; then
step tests
TESTS=${TESTS:-'cuda|gpu|half|xreduce|wmma'} timeout 240 bash bench/gpu/device_check.sh "$build" "$tmp/t" tests,tutorials > /dev/null 2>&1
cat "$tmp/t/summary.txt" >> "$out/summary.txt"
for f in $(grep '^FAIL' "$tmp/t/summary.txt" | awk '{print $2}'); do
    awk -v n="$f" '$0 ~ "^=== "n" " {p=1} p && /^=== / && $0 !~ n {p=0} p' "$tmp/t/tests-detail.log" | tail -40 >> "$out/summary.txt"
done

fi

if [[ $steps == *layouts* ]]; then
step layouts
for spec in "nt float16" "tn float16" "tt float16" "nn float32" "nt float32" "tn float32"; do
    set -- $spec
    timeout 30 "$build/bench/bench_tc_probe" --size 256 --layout "$1" --dtype "$2" >> "$out/summary.txt" 2>&1
    echo "probe layout $1 $2 exit $?" >> "$out/summary.txt"
done
fi

if [[ $steps == *sweeps* ]]; then
step sweeps
t="$build/bench/bench_tc_gemm"
cfg() { for c in "$@"; do printf -- '--config %s ' "$c"; done; }
{
    "$t" --dtype float16 $(cfg 128,128,64,64,32,2,0 128,128,64,64,64,3,1 128,128,64,64,32,4,0)
    "$t" --dtype bfloat16 $(cfg 128,128,64,64,32,2,1 128,128,64,64,32,3,1 128,128,64,64,64,3,1 \
        128,128,64,64,64,3,0 128,256,64,64,32,3,1) | tail -n +2
    "$t" --dtype float32 $(cfg 128,128,64,64,16,2,1 128,128,64,64,32,3,1 128,128,64,64,32,4,1 \
        128,128,64,64,32,3,0 128,256,64,64,32,3,1) | tail -n +2
} > "$out/sweep.csv" 2>> "$out/summary.txt"
timeout 150 "$build/bench/bench_cuda_gemm" > "$out/gemm.csv" 2>> "$out/summary.txt"
# the implicit-GEMM convolutions (float16, batch 16) after the CUDA-core GEMM, same file
c="$build/bench/bench_tc_conv"
{
    echo "# bench_tc_conv"
    timeout 60 "$c"
    timeout 40 "$c" --shape 16,64,56,56,64,3,3,1 $(cfg 64,128,32,64,32,3,0 64,128,64,64,32,3,0 64,256,64,64,32,3,0) | tail -n +2
    timeout 40 "$c" --shape 16,256,14,14,256,3,3,1 $(cfg 128,64,64,32,32,3,0 128,64,64,64,32,3,0 256,64,64,64,32,3,0) | tail -n +2
    timeout 30 "$c" --shape 1,128,28,28,128,3,3,1 $(cfg 16,112,16,112,64,3,0 32,112,16,112,64,3,0 64,112,16,112,64,3,0) | tail -n +2
    # NHWC input, HWIO weights: a chunk of the reduction is contiguous channels
    timeout 60 "$c" --layout nhwc | tail -n +2
    timeout 30 "$c" --layout nhwc --shape 1,128,28,28,128,3,3,1 $(cfg 16,128,16,64,64,3,0 16,64,16,32,64,3,0) | tail -n +2
} >> "$out/gemm.csv" 2>> "$out/summary.txt"
grep -A20 '^# bench_tc_conv' "$out/gemm.csv" | sort -t, -k16 -g -r | head -4 >> "$out/summary.txt"
sort -t, -k13 -g -r "$out/sweep.csv" | head -3 >> "$out/summary.txt"
sort -t, -k13 -g -r "$out/gemm.csv" | head -3 >> "$out/summary.txt"

fi

if [[ $steps == *wgmma* ]]; then
step wgmma
timeout 60 "$build/bench/bench_tc_probe" --size 256 >> "$out/summary.txt" 2>&1
echo "probe 128,256 (two panels of B) exit $?" >> "$out/summary.txt"
timeout 60 "$build/bench/bench_tc_probe" --size 512 --wgmma-config 128,256,64,256,64,4 >> "$out/summary.txt" 2>&1
t="$build/bench/bench_tc_gemm"
wg() { for c in "$@"; do printf -- '--wgmma-config %s ' "$c"; done; }
{
    timeout 60 "$t" --dtype float16 $(wg 0,0,0,0,0,0 128,256,64,256,64,3) --config 0,0,0,0,0,0,0
    timeout 40 "$t" --dtype bfloat16 $(wg 0,0,0,0,0,0) | tail -n +2
    # NHWC implicit-GEMM convolutions (ResNet-50's 3x3, batch 16) on wgmma: zero-filling gathers
    c="$build/bench/bench_tc_conv"
    echo "# bench_tc_conv --layout nhwc"
    timeout 60 "$c" --layout nhwc --shape 16,128,28,28,128,3,3,1 $(wg 128,128,64,128,64,3 \
        128,128,64,128,64,4 256,128,128,128,64,3 64,128,64,128,64,4)
    timeout 60 "$c" --layout nhwc --shape 16,64,56,56,64,3,3,1 $(wg 128,64,64,64,64,4 \
        256,64,64,64,64,4 128,64,64,64,64,3) | tail -n +2
    timeout 60 "$c" --layout nhwc --shape 16,256,14,14,256,3,3,1 $(wg 64,256,64,256,64,4 \
        64,128,64,128,64,4 64,256,64,128,64,3) | tail -n +2
} > "$out/sweep.csv" 2>> "$out/summary.txt"
sort -t, -k13 -g -r "$out/sweep.csv" | head -4 >> "$out/summary.txt"
grep -A30 '^# bench_tc_conv' "$out/sweep.csv" >> "$out/summary.txt"
fi

bench_args="--workloads bench/gpu/tc.tsv"
if [[ $steps == *tune* && -n "${TUNE:-}" ]]; then
    step tune
    for spec in $TUNE; do
        IFS=: read -r name trials secs <<< "$spec"
        IFS=$'\t' read -r _ op shape < <(grep -P "^$name\t" bench/gpu/tc.tsv)
        echo "== $name ($op $shape), $trials trials" >> "$out/tune.log"
        timeout -s INT -k 20 "$secs" "$build/autotune" --op "$op" --shape "$shape" --target cuda \
            --trials "$trials" --db "$tmp/cuda.db" --progress-interval 15 ${TUNE_ARGS:-} >> "$out/tune.log" 2>&1
        echo "autotune $name exit $?" >> "$out/summary.txt"
    done
    grep -E '^(==|best|time|re-timed)' "$out/tune.log" >> "$out/summary.txt"
    bench_args="$bench_args --db $tmp/cuda.db"
fi

if [[ $steps == *bench* ]]; then
step bench
PYTHONUNBUFFERED=1 timeout 300 python3 bench/gpu/bench_gpu.py --bench-cuda "$build/bench/bench_cuda" \
    $bench_args --out "$out/gpu.csv" >> "$out/summary.txt" 2>&1
echo "bench_gpu exit $?" >> "$out/summary.txt"
PYTHONUNBUFFERED=1 timeout 60 python3 bench/gpu/peers_tc.py --sizes 4096 --out "$out/peers.csv" >> "$out/summary.txt" 2>&1
fi

if [[ $steps == *mpi* && -n "${MPI_SCALING:-}" ]]; then
    step mpi
    out="$out" timeout 300 bash -c "$MPI_SCALING" >> "$out/summary.txt" 2>&1
    echo "mpi scaling exit $?" >> "$out/summary.txt"
fi
step done
cat "$out/summary.txt"
