#!/usr/bin/env bash
# One short call on the GPU machine for the NHWC implicit-GEMM convolutions on wgmma (session 36;
# bench/RESULTS.md): bench_tc_conv --layout nhwc over wgmma configurations of ResNet-50's 3x3 layers at
# batch 16 (each checked against the double reference first), WMMA's default beside them, then the
# peers (peers_tc.py: cuDNN in NCHW and channels_last). From the project root there, with the build
# carried as .devrun/build and the runtime debs as .devdeps:   bash bench/gpu/wgmma_conv_call.sh
source .devdeps/unpack-runtime-debs.sh >/dev/null 2>&1
export LD_LIBRARY_PATH=$PWD/.devrun/build:$LD_LIBRARY_PATH
c=.devrun/build/bench/bench_tc_conv
wg() { for x in "$@"; do printf -- '--wgmma-config %s ' "$x"; done; }
{
timeout 60 $c --layout nhwc --shape 16,128,28,28,128,3,3,1 $(wg 128,128,64,128,64,3 128,128,64,128,64,4 256,128,128,128,64,3 64,128,64,128,64,4) --config 0,0,0,0,0,0,0
timeout 60 $c --layout nhwc --shape 16,64,56,56,64,3,3,1 $(wg 128,64,64,64,64,4 256,64,64,64,64,4 128,64,64,64,64,3) | tail -n +2
timeout 60 $c --layout nhwc --shape 16,256,14,14,256,3,3,1 $(wg 64,256,64,256,64,4 64,128,64,128,64,4 64,256,64,128,64,3) | tail -n +2
} > $OUT/conv.csv 2>&1
cat $OUT/conv.csv
PYTHONUNBUFFERED=1 timeout 60 python3 bench/gpu/peers_tc.py --sizes 4096 --out $OUT/peers.csv 2>&1 | grep -i "r50\|device"
