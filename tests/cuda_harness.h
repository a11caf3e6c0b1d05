/*
 * tests/cuda_harness.h — GPU schedules of the harness workloads (matmul,
 * conv2d) in the style of TVM's "How to optimize GEMM on GPU", building
 * for the cuda target, and running on the GPU when there is one.
 */
#ifndef LOOM_CUDA_HARNESS_H
#define LOOM_CUDA_HARNESS_H

#include "sched_harness.h"

/* Each returns a fresh schedule of c (matmul from sh_matmul). */
/* i, j split by `tile`, outer parts on blockIdx.y/x, inner on threadIdx.y/x. */
sch_schedule *ch_matmul_naive(const sched_case *c, int64_t tile);
/* tile x tile threads, one output each; k in steps of `tile`; A and B
 * tiles staged in shared memory by all threads (cooperative fetch),
 * accumulator in a local cache_write. */
sch_schedule *ch_matmul_shared(const sched_case *c, int64_t tile);
/* 64x64 block tile, 8x8 threads, 2x2 vthreads of 4x4 each, k step 8;
 * A/B tiles in shared memory loaded with float4 (vectorized cooperative
 * fetch), local accumulator (compute_at needs a direct consumer, so
 * there are no per-thread local copies of the tiles: the unrolled inner
 * loops read shared memory and the CUDA compiler keeps values in
 * registers). Needs M, N
 * multiples of 64 and K a multiple of 8 for the float4 loads to be
 * aligned. */
sch_schedule *ch_matmul_vthread(const sched_case *c);
/* Conv2d (sh_conv2d): padding inlined, output axes fused and split by
 * `threads` over blockIdx.x/threadIdx.x, accumulator local. */
sch_schedule *ch_conv2d_naive(const sched_case *c, int64_t threads);
/* Conv2d: block per (n, k-tile of 8, y-tile, x-tile) with the input tile
 * and weights staged in shared memory. */
sch_schedule *ch_conv2d_shared(const sched_case *c);

/* cg_build(s, inputs + output, target) with the error printed; the
 * source is printed when LOOM_TEST_DUMP is set. */
rt_module *ch_build(const sched_case *c, sch_schedule *s, const char *target);
/* Runs m on the GPU on random inputs and compares with the reference
 * (the tolerance of sh_run). Returns mismatches, -1 on failure, -2 when
 * there is no GPU (rt_last_error says why). */
int64_t ch_run(const sched_case *c, rt_module *m);

#endif
