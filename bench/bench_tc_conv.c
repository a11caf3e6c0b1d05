/*
 * bench/bench_tc_conv.c — an experiment towards tensor-core convolutions
 * (issue 34): a float16 NCHW convolution (stride 1) written as an implicit
 * GEMM and scheduled with the tensor-core GEMM template
 * (ops_schedule_tc_gemm), the structure of cuDNN's and CUTLASS's implicit
 * GEMM kernels:
 *   F[k, p] = sum_q W2[k, q] Col[q, p],  q = (c, r, s), p = (n, oh, ow)
 * with W2 the weights as [K, C R S] (their own memory order) and Col the
 * im2col gather of the input (zero outside the padding), both computed as
 * they are copied to shared memory (never stored), then Y[n, k, oh, ow] =
 * F[k, n OH OW + oh OW + ow] in a second kernel. Each configuration is
 * checked against a double-precision reference (NaN-poisoned output,
 * |err| <= 2^-10 |want| + 1e-4 + 1e-6 C R S: float32 sums of exact
 * products, one rounding to float16) and timed; one CSV line each:
 *   N,C,H,W,K,R,S,pad,bm,bn,wm,wn,kc,stages,ms,tflops,wrong,error
 *
 *   bench_tc_conv [--shape N,C,H,W,K,R,S,pad] [--config bm,bn,wm,wn,kc,stages,unroll ...]
 *                 [--wgmma-config bm,bn,wm,wn,kc,stages ...]   (Hopper's template)
 *                 [--layout nchw|nhwc] [--arch sm_90] [--compile-only]
 * --layout nhwc: input NHWC, weights HWIO ([R S C, K]), output NHWC, the
 * GEMM transposed (F[p, k] = sum_q Col[p, q] W[q, k], q = (r, s, c)): a
 * chunk of the reduction is contiguous channels of one tap.
 */
#include <getopt.h>
#include <loom/loom.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_bench.h"

static bool compile_only, nhwc;

typedef struct {
    int64_t N, C, H, W, K, R, S, pad;
} conv_shape;

/* The implicit GEMM of shape c: its output Y, inputs X and Wt, and the
 * GEMM's stages. */
typedef struct {
    te_tensor *X, *Wt, *W2, *Col, *F, *Y;
} igemm;

/* --layout nhwc: X [N, H, W, C], W [R S C, K] (HWIO), Y = F [N OH OW, K]
 * (NHWC): F[p, k] = sum_q Col[p, q] W[q, k], q = (r, s, c), so that a
 * chunk of q is contiguous channels of one tap. */
static igemm declare_nhwc(te_ctx *ctx, conv_shape c) {
    igemm g = {0};
    te_dtype t = TE_FLOAT16;
    int64_t OH = c.H + 2 * c.pad - c.R + 1, OW = c.W + 2 * c.pad - c.S + 1;
    int64_t P = c.N * OH * OW, Q = c.R * c.S * c.C;
    g.X = te_placeholder(ctx, "X", t, TE_SHAPE(c.N, c.H, c.W, c.C));
    g.Wt = g.W2 = te_placeholder(ctx, "W", t, TE_SHAPE(Q, c.K));
    te_expr *p = te_axis(ctx, "p", P), *q = te_axis(ctx, "q", Q);
    te_expr *hw = te_int(ctx, OH * OW), *ow1 = te_int(ctx, OW), *sc = te_int(ctx, c.S * c.C),
            *cc = te_int(ctx, c.C);
    te_expr *n = te_floordiv(p, hw), *oh = te_floordiv(te_floormod(p, hw), ow1),
            *ow = te_floormod(p, ow1);
    te_expr *r = te_floordiv(q, sc), *s = te_floordiv(te_floormod(q, sc), cc), *ci = te_floormod(q, cc);
    te_expr *ih = te_sub(te_add(oh, r), te_int(ctx, c.pad)),
            *iw = te_sub(te_add(ow, s), te_int(ctx, c.pad));
    te_expr *in = te_and(te_and(te_ge(ih, te_int(ctx, 0)), te_lt(ih, te_int(ctx, c.H))),
                         te_and(te_ge(iw, te_int(ctx, 0)), te_lt(iw, te_int(ctx, c.W))));
    g.Col = te_compute(ctx, "Col", TE_AXES(p, q),
                       te_select(in, te_read(g.X, n, ih, iw, ci), te_cast(t, te_float(ctx, 0))));
    te_expr *p3 = te_axis(ctx, "p", P), *k3 = te_axis(ctx, "k", c.K);
    te_expr *rq = te_reduce_axis(ctx, "rq", Q);
    te_tensor *R = te_compute(ctx, "R", TE_AXES(p3, k3),
                              te_sum(te_mul(te_cast(TE_FLOAT32, te_read(g.Col, p3, rq)),
                                            te_cast(TE_FLOAT32, te_read(g.Wt, rq, k3))),
                                     rq));
    te_expr *p4 = te_axis(ctx, "p", P), *k4 = te_axis(ctx, "k", c.K);
    g.F = g.Y = te_compute(ctx, "F", TE_AXES(p4, k4), te_cast(t, te_read(R, p4, k4)));
    return g;
}

static igemm declare(te_ctx *ctx, conv_shape c) {
    igemm g;
    te_dtype t = TE_FLOAT16;
    int64_t OH = c.H + 2 * c.pad - c.R + 1, OW = c.W + 2 * c.pad - c.S + 1;
    int64_t P = c.N * OH * OW, Q = c.C * c.R * c.S;
    g.X = te_placeholder(ctx, "X", t, TE_SHAPE(c.N, c.C, c.H, c.W));
    g.Wt = te_placeholder(ctx, "W", t, TE_SHAPE(c.K, c.C, c.R, c.S));
    te_expr *rs = te_int(ctx, c.R * c.S), *s1 = te_int(ctx, c.S);
    te_expr *k = te_axis(ctx, "k", c.K), *q = te_axis(ctx, "q", Q);
    g.W2 = te_compute(ctx, "W2", TE_AXES(k, q),
                      te_read(g.Wt, k, te_floordiv(q, rs), te_floordiv(te_floormod(q, rs), s1),
                              te_floormod(q, s1)));
    te_expr *q2 = te_axis(ctx, "q", Q), *p = te_axis(ctx, "p", P);
    te_expr *hw = te_int(ctx, OH * OW), *ow1 = te_int(ctx, OW);
    te_expr *n = te_floordiv(p, hw), *oh = te_floordiv(te_floormod(p, hw), ow1),
            *ow = te_floormod(p, ow1);
    te_expr *ci = te_floordiv(q2, rs), *r = te_floordiv(te_floormod(q2, rs), s1),
            *s = te_floormod(q2, s1);
    te_expr *ih = te_sub(te_add(oh, r), te_int(ctx, c.pad)),
            *iw = te_sub(te_add(ow, s), te_int(ctx, c.pad));
    te_expr *in = te_and(te_and(te_ge(ih, te_int(ctx, 0)), te_lt(ih, te_int(ctx, c.H))),
                         te_and(te_ge(iw, te_int(ctx, 0)), te_lt(iw, te_int(ctx, c.W))));
    g.Col = te_compute(ctx, "Col", TE_AXES(q2, p),
                       te_select(in, te_read(g.X, n, ci, ih, iw), te_cast(t, te_float(ctx, 0))));
    te_expr *k3 = te_axis(ctx, "k", c.K), *p3 = te_axis(ctx, "p", P);
    te_expr *rq = te_reduce_axis(ctx, "rq", Q);
    te_tensor *R = te_compute(ctx, "R", TE_AXES(k3, p3),
                              te_sum(te_mul(te_cast(TE_FLOAT32, te_read(g.W2, k3, rq)),
                                            te_cast(TE_FLOAT32, te_read(g.Col, rq, p3))),
                                     rq));
    te_expr *k4 = te_axis(ctx, "k", c.K), *p4 = te_axis(ctx, "p", P);
    g.F = te_compute(ctx, "F", TE_AXES(k4, p4), te_cast(t, te_read(R, k4, p4)));
    te_expr *a[4] = {te_axis(ctx, "n", c.N), te_axis(ctx, "k", c.K), te_axis(ctx, "h", OH),
                     te_axis(ctx, "w", OW)};
    g.Y = te_compute(ctx, "Y", TE_AXES(a[0], a[1], a[2], a[3]),
                     te_read(g.F, a[1], te_add(te_mul(a[0], hw), te_add(te_mul(a[2], ow1), a[3]))));
    return g;
}

/* The inputs (float16 values as doubles, the same every call: a fixed
 * seed) and the double reference of shape c, computed once per process. */
static double *ref_x, *ref_w, *ref_y;

static int reference(conv_shape c) {
    if (ref_y) return 0;
    int64_t OH = c.H + 2 * c.pad - c.R + 1, OW = c.W + 2 * c.pad - c.S + 1;
    int64_t nx = c.N * c.C * c.H * c.W, nw = c.K * c.C * c.R * c.S, ny = c.N * c.K * OH * OW;
    ref_x = malloc(sizeof(double) * (size_t)nx);
    ref_w = malloc(sizeof(double) * (size_t)nw);
    ref_y = calloc((size_t)ny, sizeof(double));
    DLTensor *one = rt_tensor_alloc((DLDataType){kDLFloat, 16, 1}, 1, (int64_t[]){1});
    if (!ref_x || !ref_w || !ref_y || !one) return -1;
    uint64_t rng = 0x9E3779B97F4A7C15ULL;
    for (int64_t e = 0; e < nx + nw; e++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        rt_tensor_set(one, 0, (double)(rng >> 11) / 9007199254740992.0 * 2 - 1); /* to float16 */
        *(e < nx ? &ref_x[e] : &ref_w[e - nx]) = rt_tensor_get(one, 0);
    }
    rt_tensor_free(one);
    for (int64_t n = 0; n < c.N; n++)
        for (int64_t k = 0; k < c.K; k++)
            for (int64_t ci = 0; ci < c.C; ci++)
                for (int64_t r = 0; r < c.R; r++)
                    for (int64_t s = 0; s < c.S; s++) {
                        double wv = ref_w[((k * c.C + ci) * c.R + r) * c.S + s];
                        for (int64_t y = 0; y < OH; y++) {
                            int64_t iy = y + r - c.pad;
                            if (iy < 0 || iy >= c.H) continue;
                            const double *xr = ref_x + ((n * c.C + ci) * c.H + iy) * c.W;
                            double *yr = ref_y + ((n * c.K + k) * OH + y) * OW;
                            for (int64_t x = 0; x < OW; x++) {
                                int64_t ix = x + s - c.pad;
                                if (ix >= 0 && ix < c.W) yr[x] += xr[ix] * wv;
                            }
                        }
                    }
    return 0;
}

/* NCHW (reference) positions of NHWC element e of X, HWIO element e of W,
 * NHWC element e of Y. */
static int64_t x_of(conv_shape c, int64_t e) {
    int64_t ci = e % c.C, w = e / c.C % c.W, h = e / (c.C * c.W) % c.H, n = e / (c.C * c.W * c.H);
    return ((n * c.C + ci) * c.H + h) * c.W + w;
}
static int64_t w_of(conv_shape c, int64_t e) {
    int64_t k = e % c.K, q = e / c.K, ci = q % c.C, s = q / c.C % c.S, r = q / (c.C * c.S);
    return ((k * c.C + ci) * c.R + r) * c.S + s;
}
static int64_t y_of(conv_shape c, int64_t OH, int64_t OW, int64_t e) {
    int64_t k = e % c.K, x = e / c.K % OW, y = e / (c.K * OW) % OH, n = e / (c.K * OW * OH);
    return ((n * c.K + k) * OH + y) * OW + x;
}

/* Outputs of m outside the tolerance against the double reference, or -1. */
static int64_t check(rt_module *m, conv_shape c, char *err, size_t errsz) {
    int64_t OH = c.H + 2 * c.pad - c.R + 1, OW = c.W + 2 * c.pad - c.S + 1;
    DLDataType h = {kDLFloat, 16, 1};
    int64_t sh[3][4] = {{c.N, c.C, c.H, c.W}, {c.K, c.C, c.R, c.S}, {c.N, c.K, OH, OW}};
    int nd[3] = {4, 4, 4};
    if (nhwc) {
        /* the GEMM's own tensors: W [R S C, K], Y [N OH OW, K] */
        int64_t hs[3][4] = {{c.N, c.H, c.W, c.C}, {c.R * c.S * c.C, c.K}, {c.N * OH * OW, c.K}};
        memcpy(sh, hs, sizeof sh);
        nd[1] = nd[2] = 2;
    }
    DLTensor *ht[3], *dt[3] = {0};
    int64_t bad = -1;
    if (reference(c)) {
        snprintf(err, errsz, "check: out of memory");
        return -1;
    }
    for (int i = 0; i < 3; i++) ht[i] = rt_tensor_alloc(h, nd[i], sh[i]);
    for (int i = 0; i < 3; i++)
        for (int64_t e = 0; e < rt_tensor_numel(ht[i]); e++)
            rt_tensor_set(ht[i], e, i == 2 ? NAN : i == 0 ? ref_x[nhwc ? x_of(c, e) : e]
                                                          : ref_w[nhwc ? w_of(c, e) : e]);
    for (int i = 0; i < 3; i++)
        if (!(dt[i] = rt_cuda_tensor_alloc(h, nd[i], sh[i], 0)) || rt_tensor_copy(dt[i], ht[i])) {
            snprintf(err, errsz, "check: %s", rt_last_error());
            goto out;
        }
    if (rt_call(m, "default", 3, dt) || rt_tensor_copy(ht[2], dt[2])) {
        snprintf(err, errsz, "check: %s", rt_module_errmsg(m));
        goto out;
    }
    bad = 0;
    double tol_a = 1e-4 + 1e-6 * (double)(c.C * c.R * c.S);
    for (int64_t e = 0; e < rt_tensor_numel(ht[2]); e++) {
        double got = rt_tensor_get(ht[2], e), want = ref_y[nhwc ? y_of(c, OH, OW, e) : e];
        if (!(fabs(got - want) <= tol_a + 0x1p-10 * fabs(want))) bad++;
    }
    if (bad) snprintf(err, errsz, "check: %lld outputs wrong", (long long)bad);
out:
    for (int i = 0; i < 3; i++) rt_tensor_free(ht[i]), rt_tensor_free(dt[i]);
    return bad;
}

static void run(conv_shape c, const char *arch, ops_tc_config cfg) {
    te_ctx *ctx = te_ctx_new();
    char err[600] = "", target[64];
    double ms = NAN;
    int64_t wrong = -1;
    rt_module *m = NULL;
    snprintf(target, sizeof target, "cuda -arch=%s", arch);
    igemm g = nhwc ? declare_nhwc(ctx, c) : declare(ctx, c);
    sch_schedule *s = g.Y ? sch_create(ctx, 1, &g.Y) : NULL;
    te_expr *f, *bo, *bi;
    if (!s || (nhwc ? ops_schedule_tc_gemm(s, g.F, g.Col, g.Wt, &cfg)
                    : ops_schedule_tc_gemm(s, g.F, g.W2, g.Col, &cfg)) ||
        (!nhwc &&
         (sch_fuse(s, g.Y, 4, (te_expr *[]){sch_axis(g.Y, 0), sch_axis(g.Y, 1), sch_axis(g.Y, 2), sch_axis(g.Y, 3)}, &f) ||
          sch_split(s, g.Y, f, 256, &bo, &bi) || sch_bind(s, g.Y, bo, "blockIdx.x") ||
          sch_bind(s, g.Y, bi, "threadIdx.x"))) ||
        !(m = cg_build(s, 3, (te_tensor *[]){g.X, g.Wt, g.Y}, target, NULL))) {
        snprintf(err, sizeof err, "%s", te_ctx_errmsg(ctx));
        goto out;
    }
    if (compile_only) goto out;
    if ((wrong = check(m, c, err, sizeof err))) goto out;
    ms = bench_gpu_median_ms(m, 3, (te_tensor *[]){g.X, g.Wt, g.Y}, err, sizeof err);
out:
    bench_csv_field(err);
    int64_t OH = c.H + 2 * c.pad - c.R + 1, OW = c.W + 2 * c.pad - c.S + 1;
    double flops = 2.0 * c.N * c.K * OH * OW * c.C * c.R * c.S;
    printf("%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%d,%.5f,%.1f,%lld,\"%.300s\"\n",
           (long long)c.N, (long long)c.C, (long long)c.H, (long long)c.W, (long long)c.K,
           (long long)c.R, (long long)c.S, (long long)c.pad, (long long)cfg.bm, (long long)cfg.bn,
           (long long)cfg.wm, (long long)cfg.wn, (long long)cfg.kc, cfg.stages, ms,
           ms > 0 ? flops / (ms * 1e-3) * 1e-12 : NAN, (long long)wrong, err);
    fflush(stdout);
    rt_module_free(m);
    te_ctx_free(ctx);
}

int main(int argc, char **argv) {
    const char *arch = "sm_90";
    conv_shape c = {16, 128, 28, 28, 128, 3, 3, 1};
    ops_tc_config list[32];
    int n = 0;
    static const struct option longs[] = {{"shape", required_argument, 0, 's'},
                                          {"arch", required_argument, 0, 'a'},
                                          {"config", required_argument, 0, 'c'},
                                          {"wgmma-config", required_argument, 0, 'w'},
                                          {"compile-only", no_argument, 0, 'o'},
                                          {"layout", required_argument, 0, 'l'},
                                          {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        long long v[8] = {0};
        switch (o) {
        case 'a': arch = optarg; break;
        case 'l':
            if (strcmp(optarg, "nhwc") && strcmp(optarg, "nchw")) goto usage;
            nhwc = !strcmp(optarg, "nhwc");
            break;
        case 'o': compile_only = true; break;
        case 's':
            if (sscanf(optarg, "%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld", &v[0], &v[1], &v[2], &v[3],
                       &v[4], &v[5], &v[6], &v[7]) != 8)
                goto usage;
            c = (conv_shape){v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
            break;
        case 'c':
            if (n == 32 || sscanf(optarg, "%lld,%lld,%lld,%lld,%lld,%lld,%lld", &v[0], &v[1], &v[2],
                                  &v[3], &v[4], &v[5], &v[6]) != 7)
                goto usage;
            list[n++] = (ops_tc_config){.bm = v[0], .bn = v[1], .wm = v[2], .wn = v[3], .kc = v[4],
                                        .stages = (int)v[5], .unroll_k = v[6] != 0};
            break;
        case 'w':
            if (n == 32 || sscanf(optarg, "%lld,%lld,%lld,%lld,%lld,%lld", &v[0], &v[1], &v[2],
                                  &v[3], &v[4], &v[5]) != 6)
                goto usage;
            list[n++] = (ops_tc_config){.bm = v[0], .bn = v[1], .wm = v[2], .wn = v[3], .kc = v[4],
                                        .stages = (int)v[5], .wgmma = true};
            break;
        default: goto usage;
        }
    }
    if (!compile_only && !rt_cuda_available()) {
        fprintf(stderr, "bench_tc_conv: no GPU: %s\n", rt_last_error());
        return 1;
    }
    if (n == 0) {
        static const int64_t sweep[][7] = {{128, 128, 64, 64, 32, 2, 0}, {128, 128, 64, 64, 32, 3, 0},
                                           {128, 64, 64, 32, 32, 3, 0},  {64, 128, 32, 64, 32, 3, 0},
                                           {64, 64, 32, 32, 32, 3, 0},   {128, 128, 64, 64, 16, 4, 1}};
        for (int q = 0; q < (int)(sizeof sweep / sizeof sweep[0]); q++)
            list[n++] = (ops_tc_config){.bm = sweep[q][0], .bn = sweep[q][1], .wm = sweep[q][2],
                                        .wn = sweep[q][3], .kc = sweep[q][4],
                                        .stages = (int)sweep[q][5], .unroll_k = sweep[q][6] != 0};
    }
    printf("N,C,H,W,K,R,S,pad,bm,bn,wm,wn,kc,stages,ms,tflops,wrong,error\n");
    for (int q = 0; q < n; q++) run(c, arch, list[q]);
    return 0;
usage:
    fprintf(stderr, "usage: %s [--shape N,C,H,W,K,R,S,pad] [--config bm,bn,wm,wn,kc,stages,unroll]... "
                    "[--wgmma-config bm,bn,wm,wn,kc,stages]... [--layout nchw|nhwc] [--arch sm_XX] "
                    "[--compile-only]\n",
            argv[0]);
    return 2;
}
