/*
 * bench/bench_tc_probe.c — where the tensor-core GEMM's elements come
 * from: runs ops_schedule_tc_gemm (wgmma or WMMA) on index-coded inputs
 * and reports the first mismatches as the (row, column) of the operand
 * each wrong output copied, so that a layout error (a swizzle, a
 * descriptor's byte offsets, the accumulator's register map) shows its
 * pattern in one run. With A the identity, C = B: each C[i][j] should be
 * B[i][j]; B filled with its row index, then its column index, says which
 * element of B arrived. With B the identity, likewise for A. Inputs are
 * float16, or float32 run as tf32 (--dtype float32), whose integers up to
 * 2048 are exact (N at most 2048). --layout says how A and B are stored:
 * nn A [M, K] and B [K, N]; tn A [K, M]; nt B [N, K]; tt both (wgmma
 * takes each; WMMA only nn). Indices printed are logical (A[i][k], B[k][j]).
 *
 *   bench_tc_probe [--size N] [--wgmma-config bm,bn,wm,wn,kc,stages] [--arch sm_90]
 *                  [--layout nn|tn|nt|tt] [--dtype float16|float32]
 */
#include <getopt.h>
#include <loom/loom.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    bool ta, tb; /* A stored [K, M], B stored [N, K] */
    bool f32;    /* float32 inputs (tf32 products) */
} layout;

static int probe(int64_t n, const ops_tc_config *c, const char *arch, layout l, int which,
                 int code) {
    te_ctx *ctx = te_ctx_new();
    te_dtype t = l.f32 ? TE_FLOAT32 : TE_FLOAT16;
    te_tensor *A = te_placeholder(ctx, "A", t, TE_SHAPE(n, n));
    te_tensor *B = te_placeholder(ctx, "B", t, TE_SHAPE(n, n));
    te_expr *i = te_axis(ctx, "i", n), *j = te_axis(ctx, "j", n), *k = te_reduce_axis(ctx, "k", n);
    te_expr *a = l.ta ? te_read(A, k, i) : te_read(A, i, k);
    te_expr *b = l.tb ? te_read(B, j, k) : te_read(B, k, j);
    if (!l.f32) a = te_cast(TE_FLOAT32, a), b = te_cast(TE_FLOAT32, b);
    te_tensor *C = te_compute(ctx, "C", TE_AXES(i, j), te_sum(te_mul(a, b), k));
    sch_schedule *s = sch_create(ctx, 1, &C);
    char target[64];
    snprintf(target, sizeof target, "cuda -arch=%s", arch);
    te_tensor *args[3] = {A, B, C};
    rt_module *m = NULL;
    if (!s || ops_schedule_tc_gemm(s, C, A, B, c) || !(m = cg_build(s, 3, args, target, NULL))) {
        printf("build: %s\n", te_ctx_errmsg(ctx));
        te_ctx_free(ctx);
        return -1;
    }
    DLDataType f = {kDLFloat, 32, 1}, h = {kDLFloat, l.f32 ? 32 : 16, 1};
    int64_t sh[2] = {n, n};
    DLTensor *hA = rt_tensor_alloc(h, 2, sh), *hB = rt_tensor_alloc(h, 2, sh),
             *hC = rt_tensor_alloc(f, 2, sh);
    for (int64_t r = 0; r < n; r++)
        for (int64_t q = 0; q < n; q++) {
            /* logical element (r, q) of each operand, where its layout keeps it */
            int64_t at_a = l.ta ? q * n + r : r * n + q, at_b = l.tb ? q * n + r : r * n + q;
            double code_v = code ? q : r; /* the probed operand: its row or column index */
            rt_tensor_set(which ? hB : hA, which ? at_b : at_a, code_v);
            rt_tensor_set(which ? hA : hB, which ? at_a : at_b, r == q ? 1.0 : 0.0);
            rt_tensor_set(hC, r * n + q, -1.0);
        }
    DLTensor *d[3] = {rt_cuda_tensor_alloc(h, 2, sh, 0), rt_cuda_tensor_alloc(h, 2, sh, 0),
                      rt_cuda_tensor_alloc(f, 2, sh, 0)};
    int bad = 0;
    if (rt_tensor_copy(d[0], hA) || rt_tensor_copy(d[1], hB) || rt_tensor_copy(d[2], hC) ||
        rt_call(m, "default", 3, d) || rt_tensor_copy(hC, d[2])) {
        printf("run: %s\n", rt_last_error());
        bad = -1;
    } else {
        for (int64_t r = 0; r < n; r++)
            for (int64_t q = 0; q < n; q++) {
                double got = rt_tensor_get(hC, r * n + q), want = code ? q : r;
                if (got != want && bad++ < 12)
                    printf("  %s(%s) C[%lld][%lld] = %g, want %g\n", which ? "B" : "A",
                           code ? "column" : "row", (long long)r, (long long)q, got, want);
            }
        printf("%s coded by %s: %d of %lld wrong\n", which ? "B" : "A", code ? "column" : "row",
               bad, (long long)(n * n));
    }
    for (int q = 0; q < 3; q++) rt_tensor_free(d[q]);
    rt_tensor_free(hA);
    rt_tensor_free(hB);
    rt_tensor_free(hC);
    rt_module_free(m);
    te_ctx_free(ctx);
    return bad;
}

int main(int argc, char **argv) {
    int64_t n = 256;
    const char *arch = "sm_90";
    ops_tc_config c = {.bm = 128, .bn = 128, .wm = 64, .wn = 128, .kc = 64, .stages = 2, .wgmma = true};
    layout l = {false, false, false};
    static const struct option longs[] = {{"size", required_argument, 0, 's'},
                                          {"arch", required_argument, 0, 'a'},
                                          {"wgmma-config", required_argument, 0, 'w'},
                                          {"layout", required_argument, 0, 'l'},
                                          {"dtype", required_argument, 0, 'd'},
                                          {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        long long v[6];
        switch (o) {
        case 's': n = atoll(optarg); break;
        case 'l':
            if (strlen(optarg) != 2 || !strchr("nt", optarg[0]) || !strchr("nt", optarg[1]))
                goto usage;
            l.ta = optarg[0] == 't', l.tb = optarg[1] == 't';
            break;
        case 'd':
            if (strcmp(optarg, "float16") && strcmp(optarg, "float32")) goto usage;
            l.f32 = !strcmp(optarg, "float32");
            break;
        case 'a': arch = optarg; break;
        case 'w':
            if (sscanf(optarg, "%lld,%lld,%lld,%lld,%lld,%lld", &v[0], &v[1], &v[2], &v[3], &v[4],
                       &v[5]) != 6)
                goto usage;
            c = (ops_tc_config){.bm = v[0], .bn = v[1], .wm = v[2], .wn = v[3], .kc = v[4],
                                .stages = (int)v[5], .wgmma = true};
            break;
        default: goto usage;
        }
    }
    if (n <= 0 || n > 2048) goto usage;
    if (!rt_cuda_available()) {
        fprintf(stderr, "bench_tc_probe: no GPU: %s\n", rt_last_error());
        return 1;
    }
    int bad = 0;
    for (int which = 0; which < 2; which++)
        for (int code = 0; code < 2; code++) bad |= probe(n, &c, arch, l, which, code) != 0;
    return bad;
usage:
    fprintf(stderr, "usage: %s [--size N (<= 2048)] [--arch sm_XX] [--wgmma-config "
                    "bm,bn,wm,wn,kc,stages] [--layout nn|tn|nt|tt] [--dtype float16|float32]\n",
            argv[0]);
    return 2;
}
