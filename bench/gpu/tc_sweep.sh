#!/usr/bin/env bash
# The tensor-core GEMM's knobs on the GPU (bench_tc_gemm): block and warp tiles, k chunk, unrolling
# and the pipeline's depth (stages 1-4), for float16, bfloat16 and tf32 at 4096^3, float16 at 2048^3
# and BERT's QKV shape. From the project root on the GPU machine (bench/README.md):
#   bash bench/gpu/tc_sweep.sh BUILD OUT      -> OUT/sweep.csv (bench_tc_gemm's columns)
# cuBLAS in the same call: bench/gpu/peers_tc.py.
set -u
build=${1:?build dir}
out=${2:?output dir}
mkdir -p "$out"
t="$build/bench/bench_tc_gemm"
cfgs() { for c in "$@"; do printf -- '--config %s ' "$c"; done; }
{
    "$t" --dtype float16
    # shape/stage pairs that the float16 sweep's neighbourhood suggests, for the other types
    "$t" --dtype bfloat16 $(cfgs 128,128,64,64,32,2,1 128,128,64,64,32,3,1 128,128,64,64,32,4,1 \
        128,256,64,64,32,3,1 128,256,64,64,32,4,1 256,128,64,64,32,3,1 128,128,64,64,64,3,1) | tail -n +2
    "$t" --dtype float32 $(cfgs 128,128,64,64,32,2,1 128,128,64,64,32,3,1 128,128,64,64,32,4,1 \
        128,256,64,64,32,3,1 128,128,64,64,16,4,1 256,128,64,64,32,3,1) | tail -n +2
    "$t" --dtype float16 --size 2048,2048,2048 $(cfgs 128,128,64,64,32,2,0 128,128,64,64,32,3,0 \
        128,128,64,64,32,4,0 128,256,64,64,32,3,0 128,128,64,64,64,3,0) | tail -n +2
    "$t" --dtype float16 --size 512,2304,768 $(cfgs 64,64,32,32,32,2,1 64,64,32,32,32,3,1 \
        64,64,32,32,32,4,1 64,128,32,64,32,3,1 128,128,64,64,32,3,0 128,64,64,32,32,3,1) | tail -n +2
} > "$out/sweep.csv" 2> "$out/sweep.err"
sort -t, -k13 -g -r "$out/sweep.csv" | head -5
