/*
 * bench/bench_tc_gemm.c — the tensor-core GEMM (ops_schedule_tc_gemm)
 * over its knobs on the GPU: which block, warp and chunk shapes are
 * fastest for a shape and type. One CSV line per configuration:
 *   dtype,M,N,K,bm,bn,wm,wn,kc,buffers,unroll_k,ms,tflops,error,engine
 * (engine: wmma, or wgmma for Hopper's warpgroup MMA, whose wm x wn is a
 * warpgroup's tile; 0 knobs take the template's defaults).
 * ms: median of CUDA-event timings after warm-up (rt_cuda_time_call), on
 * random inputs.
 * No correctness check here: tests/test_cuda_wmma.c checks the schedule.
 *
 *   bench_tc_gemm [--dtype float16|bfloat16|float32] [--size M,N,K] [--arch sm_90]
 *                 [--config bm,bn,wm,wn,kc,buffers,unroll ...]   (default: a built-in sweep)
 *                 [--wgmma-config bm,bn,wm,wn,kc,buffers[,group_m] ...]
 *                 [--compile-only]   (build every configuration, time none: no GPU needed)
 */
#include <getopt.h>
#include <loom/loom.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_bench.h"

static bool compile_only;

static void run(te_dtype t, const char *dname, int64_t M, int64_t N, int64_t K, const char *arch,
                ops_tc_config c) {
    te_ctx *ctx = te_ctx_new();
    char err[600] = "";
    double ms = NAN;
    rt_module *m = NULL;
    te_tensor *A = te_placeholder(ctx, "A", t, TE_SHAPE(M, K));
    te_tensor *B = te_placeholder(ctx, "B", t, TE_SHAPE(K, N));
    te_expr *i = te_axis(ctx, "i", M), *j = te_axis(ctx, "j", N), *k = te_reduce_axis(ctx, "k", K);
    te_expr *x = te_read(A, i, k), *y = te_read(B, k, j);
    if (t.bits != 32) x = te_cast(TE_FLOAT32, x), y = te_cast(TE_FLOAT32, y);
    te_tensor *C = te_compute(ctx, "C", TE_AXES(i, j), te_sum(te_mul(x, y), k));
    sch_schedule *s = sch_create(ctx, 1, &C);
    char target[64];
    snprintf(target, sizeof target, "cuda -arch=%s", arch);
    te_tensor *args[3] = {A, B, C};
    if (!s || ops_schedule_tc_gemm(s, C, A, B, &c) ||
        !(m = cg_build(s, 3, args, target, NULL))) {
        snprintf(err, sizeof err, "%s", te_ctx_errmsg(ctx));
        goto out;
    }
    if (compile_only) goto out;
    ms = bench_gpu_median_ms(m, 3, args, err, sizeof err);
out:
    bench_csv_field(err);
    printf("%s,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%d,%d,%.5f,%.1f,\"%.300s\",%s\n", dname,
           (long long)M, (long long)N, (long long)K, (long long)c.bm, (long long)c.bn,
           (long long)c.wm, (long long)c.wn, (long long)c.kc,
           c.stages ? c.stages : c.single_buffer ? 1 : 2,
           c.unroll_k ? 1 : 0, ms, ms > 0 ? 2.0 * M * N * K / (ms * 1e-3) * 1e-12 : NAN, err,
           c.wgmma ? "wgmma" : "wmma");
    fflush(stdout);
    rt_module_free(m);
    te_ctx_free(ctx);
}

int main(int argc, char **argv) {
    const char *dname = "float16", *arch = "sm_90";
    int64_t M = 4096, N = 4096, K = 4096;
    ops_tc_config list[64];
    int n = 0;
    static const struct option longs[] = {{"dtype", required_argument, 0, 'd'},
                                          {"size", required_argument, 0, 's'},
                                          {"arch", required_argument, 0, 'a'},
                                          {"config", required_argument, 0, 'c'},
                                          {"wgmma-config", required_argument, 0, 'w'},
                                          {"compile-only", no_argument, 0, 'o'},
                                          {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        long long v[7] = {0};
        switch (o) {
        case 'd': dname = optarg; break;
        case 'a': arch = optarg; break;
        case 'o': compile_only = true; break;
        case 's':
            if (sscanf(optarg, "%lld,%lld,%lld", &v[0], &v[1], &v[2]) != 3) goto usage;
            M = v[0], N = v[1], K = v[2];
            break;
        case 'c':
            if (n == 64 || sscanf(optarg, "%lld,%lld,%lld,%lld,%lld,%lld,%lld", &v[0], &v[1], &v[2],
                                  &v[3], &v[4], &v[5], &v[6]) != 7)
                goto usage;
            list[n++] = (ops_tc_config){.bm = v[0], .bn = v[1], .wm = v[2], .wn = v[3],
                                        .kc = v[4], .stages = (int)v[5], .unroll_k = v[6] != 0};
            break;
        case 'w': {
            int got = n == 64 ? 0
                              : sscanf(optarg, "%lld,%lld,%lld,%lld,%lld,%lld,%lld", &v[0], &v[1],
                                       &v[2], &v[3], &v[4], &v[5], &v[6]);
            if (got != 6 && got != 7) goto usage;
            list[n++] = (ops_tc_config){.bm = v[0], .bn = v[1], .wm = v[2], .wn = v[3],
                                        .kc = v[4], .stages = (int)v[5], .wgmma = true,
                                        .group_m = got == 7 ? v[6] : 0};
            break;
        }
        default: goto usage;
        }
    }
    te_dtype t;
    if (!te_dtype_parse(dname, &t) || !te_dtype_is_float(t) || t.bits == 64) goto usage;
    if (!compile_only && !rt_cuda_available()) {
        fprintf(stderr, "bench_tc_gemm: no GPU: %s\n", rt_last_error());
        return 1;
    }
    if (n == 0) {
        /* block, warp, chunk shapes around CUTLASS's usual ones, and the
         * pipeline's depth (CUTLASS's sm_80 GEMMs: 3 to 5 stages) */
        static const int64_t sweep[][6] = {
            {128, 128, 64, 64, 32, 2},  {128, 128, 64, 64, 32, 3}, {128, 128, 64, 64, 32, 4},
            {128, 128, 64, 64, 64, 3},  {128, 128, 64, 64, 64, 4}, {128, 256, 64, 64, 32, 2},
            {128, 256, 64, 64, 32, 3},  {128, 256, 64, 64, 32, 4}, {256, 128, 64, 64, 32, 3},
            {256, 128, 64, 64, 32, 4},  {128, 256, 64, 64, 64, 3}, {128, 128, 64, 32, 32, 3},
            {64, 64, 32, 32, 32, 3},    {64, 128, 32, 64, 32, 3}};
        for (int q = 0; q < (int)(sizeof sweep / sizeof sweep[0]); q++)
            for (int u = 0; u < 2; u++)
                list[n++] = (ops_tc_config){.bm = sweep[q][0], .bn = sweep[q][1],
                                            .wm = sweep[q][2], .wn = sweep[q][3],
                                            .kc = sweep[q][4], .stages = (int)sweep[q][5],
                                            .unroll_k = u == 1};
        list[n++] = (ops_tc_config){.bm = 128, .bn = 128, .wm = 64, .wn = 32, .stages = 1};
    }
    printf("dtype,M,N,K,bm,bn,wm,wn,kc,buffers,unroll_k,ms,tflops,error,engine\n");
    for (int q = 0; q < n; q++) run(t, dname, M, N, K, arch, list[q]);
    return 0;
usage:
    fprintf(stderr, "usage: %s [--dtype float16|bfloat16|float32] [--size M,N,K] [--arch sm_XX] "
                    "[--config bm,bn,wm,wn,kc,buffers(1-4),unroll_k(0|1)]... "
                    "[--wgmma-config bm,bn,wm,wn,kc,buffers[,group_m]]... [--compile-only]\n",
            argv[0]);
    return 2;
}
