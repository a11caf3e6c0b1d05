/*
 * bench/bench_cuda_gemm.c — the CUDA-core float32 GEMM
 * (ops_schedule_cuda_gemm) over its knobs on the GPU, each configuration
 * checked against the matmul's double-precision reference
 * (ops_check_module, NaN-poisoned output) at 256 x 256 x 256 (the
 * reference in double on the CPU is too slow at the timed size; the tiles
 * and the pipeline are the same code) before it is timed. One CSV line
 * per configuration:
 *   M,N,K,vt_m,th_m,in_m,vt_n,th_n,in_n,kt,stages,ms,tflops,wrong,error
 * ms: median of CUDA-event timings after warm-up; wrong: outputs outside
 * ops_tolerance (-1: not checked).
 *
 *   bench_cuda_gemm [--size M,N,K] [--arch sm_90] [--compile-only]
 *                   [--config vt_m,th_m,in_m,vt_n,th_n,in_n,kt,stages ...]  (default: a sweep)
 */
#include <getopt.h>
#include <loom/loom.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_bench.h"

static bool compile_only;

/* The outputs of configuration c at M x N x K outside the reference's
 * tolerance, or -1 with err set. */
static int64_t check(int64_t M, int64_t N, int64_t K, const char *target, ops_cuda_gemm_config c,
                     char *err, size_t errsz) {
    te_ctx *ctx = te_ctx_new();
    char shape[128];
    snprintf(shape, sizeof shape, "M=%lld,N=%lld,K=%lld", (long long)M, (long long)N, (long long)K);
    ops_workload *w = ops_build(ctx, "matmul", shape);
    sch_schedule *s = w ? sch_create(ctx, 1, &w->args[2]) : NULL;
    rt_module *m = NULL;
    int64_t wrong = -1;
    if (!s || ops_schedule_cuda_gemm(s, w->args[2], w->args[0], w->args[1], &c) ||
        !(m = cg_build(s, 3, w->args, target, NULL)) || (wrong = ops_check_module(w, m, NULL, 1234)) < 0)
        snprintf(err, errsz, "check at %s: %s", shape, te_ctx_errmsg(ctx));
    else if (wrong)
        snprintf(err, errsz, "check at %s: wrong outputs", shape);
    rt_module_free(m);
    te_ctx_free(ctx);
    return wrong;
}

static void run(int64_t M, int64_t N, int64_t K, const char *arch, ops_cuda_gemm_config c) {
    te_ctx *ctx = te_ctx_new();
    char err[600] = "", shape[128], target[64];
    double ms = NAN;
    int64_t wrong = -1;
    rt_module *m = NULL;
    snprintf(shape, sizeof shape, "M=%lld,N=%lld,K=%lld", (long long)M, (long long)N, (long long)K);
    snprintf(target, sizeof target, "cuda -arch=%s", arch);
    ops_workload *w = ops_build(ctx, "matmul", shape);
    sch_schedule *s = w ? sch_create(ctx, 1, &w->args[2]) : NULL;
    if (!s || ops_schedule_cuda_gemm(s, w->args[2], w->args[0], w->args[1], &c) ||
        !(m = cg_build(s, 3, w->args, target, NULL))) {
        snprintf(err, sizeof err, "%s", te_ctx_errmsg(ctx));
        goto out;
    }
    if (compile_only) goto out;
    if ((wrong = check(256, 256, 256, target, c, err, sizeof err))) goto out;
    ms = bench_gpu_median_ms(m, 3, w->args, err, sizeof err);
out:
    bench_csv_field(err);
    printf("%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%d,%.5f,%.1f,%lld,\"%.300s\"\n",
           (long long)M, (long long)N, (long long)K, (long long)c.vt_m, (long long)c.th_m,
           (long long)c.in_m, (long long)c.vt_n, (long long)c.th_n, (long long)c.in_n,
           (long long)c.kt, c.stages, ms, ms > 0 ? 2.0 * M * N * K / (ms * 1e-3) * 1e-12 : NAN,
           (long long)wrong, err);
    fflush(stdout);
    rt_module_free(m);
    te_ctx_free(ctx);
}

int main(int argc, char **argv) {
    const char *arch = "sm_90";
    int64_t M = 4096, N = 4096, K = 4096;
    ops_cuda_gemm_config list[64];
    int n = 0;
    static const struct option longs[] = {{"size", required_argument, 0, 's'},
                                          {"arch", required_argument, 0, 'a'},
                                          {"config", required_argument, 0, 'c'},
                                          {"compile-only", no_argument, 0, 'o'},
                                          {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        long long v[8] = {0};
        switch (o) {
        case 'a': arch = optarg; break;
        case 'o': compile_only = true; break;
        case 's':
            if (sscanf(optarg, "%lld,%lld,%lld", &v[0], &v[1], &v[2]) != 3) goto usage;
            M = v[0], N = v[1], K = v[2];
            break;
        case 'c':
            if (n == 64 || sscanf(optarg, "%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld", &v[0], &v[1],
                                  &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
                goto usage;
            list[n++] = (ops_cuda_gemm_config){v[0], v[1], v[2], v[3], v[4], v[5], v[6], (int)v[7]};
            break;
        default: goto usage;
        }
    }
    if (!compile_only && !rt_cuda_available()) {
        fprintf(stderr, "bench_cuda_gemm: no GPU: %s\n", rt_last_error());
        return 1;
    }
    if (n == 0) {
        /* the default (64 x 64, 64 threads), then 128-wide tiles of 256
         * threads (CUTLASS's and the SGEMM literature's usual shape), with
         * longer chunks and pipelines */
        static const int64_t sweep[][8] = {
            {2, 8, 4, 2, 8, 4, 8, 1},    {2, 8, 4, 2, 8, 4, 8, 2},    {2, 8, 4, 2, 8, 4, 16, 3},
            {2, 16, 4, 2, 16, 4, 8, 1},  {2, 16, 4, 2, 16, 4, 8, 2},  {2, 16, 4, 2, 16, 4, 8, 3},
            {2, 16, 4, 2, 16, 4, 16, 2}, {2, 16, 4, 2, 16, 4, 16, 3}, {2, 16, 4, 2, 16, 4, 32, 3},
            {2, 8, 4, 2, 16, 4, 8, 2},   {2, 16, 4, 2, 8, 4, 8, 2},   {2, 16, 4, 2, 8, 4, 16, 3},
            {1, 16, 8, 1, 16, 8, 8, 2},  {2, 8, 8, 2, 16, 4, 8, 2},   {4, 16, 2, 4, 16, 2, 8, 2},
            {2, 16, 4, 4, 16, 2, 16, 3}};
        for (int q = 0; q < (int)(sizeof sweep / sizeof sweep[0]); q++)
            list[n++] = (ops_cuda_gemm_config){sweep[q][0], sweep[q][1], sweep[q][2], sweep[q][3],
                                               sweep[q][4], sweep[q][5], sweep[q][6],
                                               (int)sweep[q][7]};
    }
    printf("M,N,K,vt_m,th_m,in_m,vt_n,th_n,in_n,kt,stages,ms,tflops,wrong,error\n");
    for (int q = 0; q < n; q++) run(M, N, K, arch, list[q]);
    return 0;
usage:
    fprintf(stderr, "usage: %s [--size M,N,K] [--arch sm_XX] "
                    "[--config vt_m,th_m,in_m,vt_n,th_n,in_n,kt,stages]... [--compile-only]\n",
            argv[0]);
    return 2;
}
