/*
 * bench/gpu_bench.h — what the GPU knob benches (bench_tc_gemm,
 * bench_cuda_gemm, bench_tc_conv) share: timing a module and writing an
 * error into a CSV field.
 */
#ifndef LOOM_BENCH_GPU_BENCH_H
#define LOOM_BENCH_GPU_BENCH_H

#include <loom/loom.h>
#include <stddef.h>

/* The median milliseconds of m's "default" over CUDA events after
 * warm-up (rt_cuda_time_call: 5 warm-up calls, 20 samples of at least
 * 20 ms), called on fresh GPU-0 tensors of args' dtypes and shapes (their
 * contents left as allocated; freed after). NAN with "alloc: ..." or
 * "timing: ..." in err (errsz bytes) on failure. */
double bench_gpu_median_ms(rt_module *m, int nargs, te_tensor *const *args, char *err,
                           size_t errsz);

/* s made fit for a quoted CSV field: newlines and quotes become spaces. */
void bench_csv_field(char *s);

#endif
