/*
 * ops/conv.c — 2-D convolutions: conv2d NCHW (OIHW weights) and NHWC
 * (HWIO weights) with stride, padding, dilation and groups; the fused
 * conv2d+bias+relu workload (NCHW); depthwise conv2d NCHW.
 *
 * Padding is a stage of its own (Pad, present only when pad > 0) with
 * clamped reads, materialised by the default schedule so that the inner
 * loop reads it as contiguous vectors. Default CPU schedule (as tutorial
 * 3): a register tile of 6 output channels x 16 output columns (NCHW), or
 * 6 output pixels x NB output channels (NHWC), accumulated in registers
 * while the reduction runs outside it; outer loops fused and parallel.
 *
 * float16/bfloat16 (conv2d_nchw, conv2d_nhwc): the padded input stays
 * 16-bit, products and sums are float32 (O_acc), and the output O is
 * O_acc cast to the 16-bit type: the register tile's F, with O_acc its
 * reduction R (as conv2d_bias_relu's tail and convolution). A 16-bit
 * conv2d_nhwc without groups whose output channels and R S C are
 * multiples of 16 is declared as its implicit GEMM instead
 * (conv_build_gemm), which the GPU runs on tensor cores.
 */
#include "ops_internal.h"

#define EXT(n, d) {n, true, 0, 1, OPS__BIG, d}
#define DEF(n, v, lo, d) {n, false, v, lo, OPS__BIG, d}

enum { CV_N, CV_C, CV_H, CV_W, CV_K, CV_R, CV_S, CV_STRIDE, CV_PAD, CV_DIL, CV_GROUPS };
enum { DW_N, DW_C, DW_H, DW_W, DW_R, DW_S, DW_STRIDE, DW_PAD, DW_DIL };

#define CONV_PARAMS                                                                        \
    EXT("N", "batch"), EXT("C", "input channels"), EXT("H", "input height"),               \
        EXT("W", "input width"), EXT("K", "output channels"), EXT("R", "kernel height"),   \
        EXT("S", "kernel width"), DEF("stride", 1, 1, "stride of both spatial dimensions"), \
        DEF("pad", 0, 0, "zero padding on each side of both spatial dimensions"),          \
        DEF("dilation", 1, 1, "kernel dilation"),                                          \
        DEF("groups", 1, 1, "channel groups (C and K divisible by groups)")

static int conv_check(te_ctx *ctx, const char *op, const int64_t *p) {
    if (ops__check_window(ctx, op, "H", p[CV_H], p[CV_R], p[CV_PAD], p[CV_DIL]) ||
        ops__check_window(ctx, op, "W", p[CV_W], p[CV_S], p[CV_PAD], p[CV_DIL]))
        return -1;
    if (p[CV_C] % p[CV_GROUPS])
        return te_error(ctx, "ops: %s: input channels C=%lld are not divisible by groups=%lld",
                        op, (long long)p[CV_C], (long long)p[CV_GROUPS]);
    if (p[CV_K] % p[CV_GROUPS])
        return te_error(ctx, "ops: %s: output channels K=%lld are not divisible by groups=%lld",
                        op, (long long)p[CV_K], (long long)p[CV_GROUPS]);
    return 0;
}
static int nchw_check(te_ctx *ctx, const int64_t *p) { return conv_check(ctx, "conv2d_nchw", p); }
static int nhwc_check(te_ctx *ctx, const int64_t *p) { return conv_check(ctx, "conv2d_nhwc", p); }
static int cbr_check(te_ctx *ctx, const int64_t *p) {
    return conv_check(ctx, "conv2d_bias_relu", p);
}

/* Whether a conv2d_nhwc of 16-bit dtype is declared as its implicit GEMM
 * (conv_build_gemm): no groups, and the GEMM's N = K and K = R S C
 * multiples of 16, the tensor cores' tile (its M is padded). */
static bool gemm_form(const ops_workload *w, const int64_t *p, bool nhwc) {
    return nhwc && te_dtype_is_half(w->dtype) && p[CV_GROUPS] == 1 && p[CV_K] % 16 == 0 &&
           (p[CV_R] * p[CV_S] * p[CV_C]) % 16 == 0;
}

/* conv2d_nhwc as the implicit GEMM of cuDNN's and CUTLASS's tensor-core
 * convolutions: Col[p, q] = X[n, y st + r dil - pad, x st + s dil - pad, c]
 * (zero in the padding; p = (n, y, x), q = (r, s, c), so that a chunk of q
 * is contiguous channels of one tap), W2[q, k] = W[r, s, c, k] (HWIO's own
 * memory order), O_acc[p, k] = sum_q Col[p, q] W2[q, k] in float32, O_gemm
 * its 16-bit cast and O[n, y, x, k] = O_gemm[(n OH + y) OW + x, k], a copy
 * of its first N OH OW rows. The GEMM's rows are the N OH OW output positions rounded up to
 * a multiple of 64 (Hopper's warpgroup MMA tiles 64 rows; rows past the
 * last position are zeros, computed and never read), so that every layer
 * runs on the tensor cores: ResNet-50's r50_c4 and c5 at batch 1 have 196
 * and 49 positions. On the GPU Col and W2 are computed in the copies to
 * shared memory (never stored); the CPU stores Col (gemm_sched). Stages:
 * t[0] = O, t[1] = O_acc, t[3] = O_gemm, t[4] = Col, t[5] = W2. */
static int conv_build_gemm(te_ctx *ctx, ops_workload *w, ops__priv *pv, const int64_t *p,
                           te_tensor *X, te_tensor *Wt) {
    int64_t N = p[CV_N], C = p[CV_C], H = p[CV_H], W = p[CV_W], K = p[CV_K], R = p[CV_R],
            S = p[CV_S], st = p[CV_STRIDE], pad = p[CV_PAD], dil = p[CV_DIL];
    int64_t OH = ops__out_extent(H, R, st, pad, dil), OW = ops__out_extent(W, S, st, pad, dil);
    int64_t P = N * OH * OW, M = (P + 63) / 64 * 64, Q = R * S * C;
    te_expr *pp = te_axis(ctx, "p", M), *q = te_axis(ctx, "q", Q);
    te_expr *hw = te_int(ctx, OH * OW), *ow = te_int(ctx, OW), *sc = te_int(ctx, S * C),
            *cc = te_int(ctx, C);
    te_expr *n = te_floordiv(pp, hw), *y = te_floordiv(te_floormod(pp, hw), ow),
            *x = te_floormod(pp, ow);
    te_expr *r = te_floordiv(q, sc), *sx = te_floordiv(te_floormod(q, sc), cc),
            *c = te_floormod(q, cc);
    te_expr *iy = te_sub(te_add(te_mul(y, te_int(ctx, st)), te_mul(r, te_int(ctx, dil))),
                         te_int(ctx, pad)),
            *ix = te_sub(te_add(te_mul(x, te_int(ctx, st)), te_mul(sx, te_int(ctx, dil))),
                         te_int(ctx, pad));
    te_expr *col;
    if (pad > 0 || M > P) {
        /* the read clamped into the input: the CPU evaluates both sides
         * of the select */
        te_expr *in = te_and(te_and(te_ge(iy, te_int(ctx, 0)), te_lt(iy, te_int(ctx, H))),
                             te_and(te_ge(ix, te_int(ctx, 0)), te_lt(ix, te_int(ctx, W))));
        if (M > P) in = te_and(te_lt(pp, te_int(ctx, P)), in);
        te_expr *cn = M > P ? te_min(n, te_int(ctx, N - 1)) : n,
                *cy = te_max(te_min(iy, te_int(ctx, H - 1)), te_int(ctx, 0)),
                *cx = te_max(te_min(ix, te_int(ctx, W - 1)), te_int(ctx, 0));
        col = te_select(in, te_read(X, cn, cy, cx, c), ops__const(ctx, w, 0));
    } else {
        col = te_read(X, n, iy, ix, c); /* every tap inside (ops__check_window) */
    }
    te_tensor *Col = te_compute(ctx, "Col", TE_AXES(pp, q), col);
    te_expr *q2 = te_axis(ctx, "q", Q), *k2 = te_axis(ctx, "k", K);
    te_tensor *W2 = te_compute(
        ctx, "W2", TE_AXES(q2, k2),
        te_read(Wt, te_floordiv(q2, sc), te_floordiv(te_floormod(q2, sc), cc), te_floormod(q2, cc),
                k2));
    te_expr *p3 = te_axis(ctx, "p", M), *k3 = te_axis(ctx, "k", K), *rq = te_reduce_axis(ctx, "rq", Q);
    te_tensor *acc = te_compute(ctx, "O_acc", TE_AXES(p3, k3),
                                te_sum(te_mul(te_cast(TE_FLOAT32, te_read(Col, p3, rq)),
                                              te_cast(TE_FLOAT32, te_read(W2, rq, k3))),
                                       rq));
    te_tensor *F = ops__cast_output(ctx, w->dtype, acc, "O_gemm");
    te_expr *a[4] = {te_axis(ctx, "n", N), te_axis(ctx, "y", OH), te_axis(ctx, "x", OW),
                     te_axis(ctx, "k", K)};
    te_tensor *O = te_compute(
        ctx, "O", TE_AXES(a[0], a[1], a[2], a[3]),
        te_read(F, te_add(te_mul(te_add(te_mul(a[0], te_int(ctx, OH)), a[1]), ow), a[2]), a[3]));
    double taps = (double)ops__real_taps(H, OH, R, st, pad, dil) *
                  (double)ops__real_taps(W, OW, S, st, pad, dil);
    w->flops = 2.0 * (double)N * (double)K * (double)C * taps;
    pv->reduce_len = Q;
    pv->t[0] = O, pv->t[1] = acc, pv->t[3] = F, pv->t[4] = Col, pv->t[5] = W2;
    w->constant_args = 0x2; /* the weights */
    return ops__set_io(ctx, w, 2, (te_tensor *[]){X, Wt}, O);
}

/* The convolution stage; t[0] = output (or conv), t[1] = conv, t[2] = Pad;
 * 16-bit NHWC convolutions that fit are the implicit GEMM above. */
static int conv_build(te_ctx *ctx, ops_workload *w, ops__priv *pv, const int64_t *p, bool nhwc,
                      bool bias_relu) {
    int64_t N = p[CV_N], C = p[CV_C], H = p[CV_H], W = p[CV_W], K = p[CV_K], R = p[CV_R],
            S = p[CV_S], st = p[CV_STRIDE], pad = p[CV_PAD], dil = p[CV_DIL], g = p[CV_GROUPS];
    int64_t OH = ops__out_extent(H, R, st, pad, dil), OW = ops__out_extent(W, S, st, pad, dil);
    int64_t Cg = C / g, Kg = K / g;
    te_tensor *X = nhwc ? ops__input(ctx, w, "X", 4, (int64_t[]){N, H, W, C})
                        : ops__input(ctx, w, "X", 4, (int64_t[]){N, C, H, W});
    te_tensor *Wt = nhwc ? ops__input(ctx, w, "W", 4, (int64_t[]){R, S, Cg, K})
                         : ops__input(ctx, w, "W", 4, (int64_t[]){K, Cg, R, S});
    if (gemm_form(w, p, nhwc)) return conv_build_gemm(ctx, w, pv, p, X, Wt);
    te_tensor *P = X;
    if (pad > 0) {
        P = nhwc ? ops__pad(ctx, X, 1, 2, pad, ops__const(ctx, w, 0))
                 : ops__pad(ctx, X, 2, 3, pad, ops__const(ctx, w, 0));
        pv->t[2] = P;
    }
    te_expr *n = te_axis(ctx, "n", N), *k = te_axis(ctx, "k", K), *y = te_axis(ctx, "y", OH),
            *x = te_axis(ctx, "x", OW);
    te_expr *rc = te_reduce_axis(ctx, "rc", Cg), *rr = te_reduce_axis(ctx, "rr", R),
            *rs = te_reduce_axis(ctx, "rs", S);
    te_expr *iy = te_add(te_mul(y, te_int(ctx, st)), te_mul(rr, te_int(ctx, dil)));
    te_expr *ix = te_add(te_mul(x, te_int(ctx, st)), te_mul(rs, te_int(ctx, dil)));
    te_expr *c = g == 1 ? rc : te_add(te_mul(te_floordiv(k, te_int(ctx, Kg)), te_int(ctx, Cg)), rc);
    te_expr *rx = nhwc ? te_read(P, n, iy, ix, c) : te_read(P, n, c, iy, ix);
    te_expr *rw = nhwc ? te_read(Wt, rr, rs, rc, k) : te_read(Wt, k, rc, rr, rs);
    bool half = te_dtype_is_half(w->dtype);
    if (half) rx = te_cast(TE_FLOAT32, rx), rw = te_cast(TE_FLOAT32, rw);
    te_expr *prod = te_mul(rx, rw);
    const char *oname = half ? "O_acc" : "O";
    te_tensor *O = nhwc ? te_compute(ctx, oname, TE_AXES(n, y, x, k), te_sum(prod, rc, rr, rs))
                        : te_compute(ctx, oname, TE_AXES(n, k, y, x), te_sum(prod, rc, rr, rs));
    double taps = (double)ops__real_taps(H, OH, R, st, pad, dil) *
                  (double)ops__real_taps(W, OW, S, st, pad, dil);
    w->flops = 2.0 * (double)N * (double)K * (double)Cg * taps;
    pv->reduce_len = Cg * R * S;
    pv->t[0] = pv->t[1] = O;
    w->constant_args = bias_relu ? 0x6 : 0x2; /* the weights (and the bias) */
    if (half) {
        pv->t[0] = ops__cast_output(ctx, w->dtype, O, "O");
        return ops__set_io(ctx, w, 2, (te_tensor *[]){X, Wt}, pv->t[0]);
    }
    if (!bias_relu) return ops__set_io(ctx, w, 2, (te_tensor *[]){X, Wt}, O);
    te_tensor *b = ops__input(ctx, w, "bias", 1, (int64_t[]){K});
    te_expr *yn = te_axis(ctx, "yn", N), *yk = te_axis(ctx, "yk", K), *yy = te_axis(ctx, "yy", OH),
            *yx = te_axis(ctx, "yx", OW);
    te_expr *v = te_max(te_add(te_read(O, yn, yk, yy, yx), te_read(b, yk)), ops__const(ctx, w, 0));
    te_tensor *Y = te_compute(ctx, "Y", TE_AXES(yn, yk, yy, yx), v);
    w->flops += 2.0 * (double)(N * K * OH * OW);
    pv->t[0] = Y;
    return ops__set_io(ctx, w, 3, (te_tensor *[]){X, Wt, b}, Y);
}

static int nchw_build(te_ctx *ctx, ops_workload *w, ops__priv *pv, const int64_t *p) {
    return conv_build(ctx, w, pv, p, false, false);
}
static int nhwc_build(te_ctx *ctx, ops_workload *w, ops__priv *pv, const int64_t *p) {
    return conv_build(ctx, w, pv, p, true, false);
}
static int cbr_build(te_ctx *ctx, ops_workload *w, ops__priv *pv, const int64_t *p) {
    return conv_build(ctx, w, pv, p, false, true);
}

/* Naive double-precision convolution; each output element sums over
 * (rc, r, s) in that order. NCHW accumulates whole output rows per weight
 * (the same sums, in the same order, as one element at a time): walking
 * the input channel by channel for each element misses the cache, and the
 * tuner's runners check every new best against this. */
static void conv_ref_common(const int64_t *p, const double *const *in, double *out, bool nhwc,
                            bool bias_relu) {
    int64_t N = p[CV_N], C = p[CV_C], H = p[CV_H], W = p[CV_W], K = p[CV_K], R = p[CV_R],
            S = p[CV_S], st = p[CV_STRIDE], pad = p[CV_PAD], dil = p[CV_DIL], g = p[CV_GROUPS];
    int64_t OH = ops__out_extent(H, R, st, pad, dil), OW = ops__out_extent(W, S, st, pad, dil);
    int64_t Cg = C / g, Kg = K / g;
    const double *X = in[0], *Wt = in[1];
    if (!nhwc) {
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < K; k++) {
                double *o = out + (n * K + k) * OH * OW;
                for (int64_t e = 0; e < OH * OW; e++) o[e] = 0;
                for (int64_t rc = 0; rc < Cg; rc++)
                    for (int64_t r = 0; r < R; r++)
                        for (int64_t s = 0; s < S; s++) {
                            int64_t c = (k / Kg) * Cg + rc;
                            double wv = Wt[((k * Cg + rc) * R + r) * S + s];
                            const double *xc = X + (n * C + c) * H * W;
                            for (int64_t y = 0; y < OH; y++) {
                                int64_t iy = y * st - pad + r * dil;
                                if (iy < 0 || iy >= H) continue;
                                for (int64_t x = 0; x < OW; x++) {
                                    int64_t ix = x * st - pad + s * dil;
                                    if (ix >= 0 && ix < W) o[y * OW + x] += xc[iy * W + ix] * wv;
                                }
                            }
                        }
                if (bias_relu)
                    for (int64_t e = 0; e < OH * OW; e++) {
                        double v = o[e] + in[2][k];
                        o[e] = v > 0 ? v : 0;
                    }
            }
        return;
    }
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t y = 0; y < OH; y++)
                for (int64_t x = 0; x < OW; x++) {
                    double acc = 0;
                    for (int64_t rc = 0; rc < Cg; rc++)
                        for (int64_t r = 0; r < R; r++)
                            for (int64_t s = 0; s < S; s++) {
                                int64_t iy = y * st - pad + r * dil, ix = x * st - pad + s * dil;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                                int64_t c = (k / Kg) * Cg + rc;
                                acc += X[((n * H + iy) * W + ix) * C + c] *
                                       Wt[((r * S + s) * Cg + rc) * K + k];
                            }
                    if (bias_relu) {
                        acc += in[2][k];
                        acc = acc > 0 ? acc : 0;
                    }
                    out[((n * OH + y) * OW + x) * K + k] = acc;
                }
}

static void nchw_ref(const ops_workload *w, const int64_t *p, const double *const *in,
                     double *const *out) {
    (void)w;
    conv_ref_common(p, in, out[0], false, false);
}
static void nhwc_ref(const ops_workload *w, const int64_t *p, const double *const *in,
                     double *const *out) {
    (void)w;
    conv_ref_common(p, in, out[0], true, false);
}
static void cbr_ref(const ops_workload *w, const int64_t *p, const double *const *in,
                    double *const *out) {
    (void)w;
    conv_ref_common(p, in, out[0], false, true);
}

/* The implicit GEMM (conv_build_gemm) on the CPU: Col materialized (its
 * gather's index arithmetic once per element: read where the product
 * needs it, r50_c3 took 7.8 ms instead of 3.0), W2 read in place, the
 * GEMM's register tile as matmul's, the copy into O elementwise. Without
 * cache blocking a long reduction re-reads W2 from L3 for every row tile:
 * on one znver4 core 0.49-0.85x the direct form's default (r50_c4
 * float16 5.0 against 2.5 ms; bench/RESULTS.md, session 43). */
static int gemm_sched(sch_schedule *s, const ops__priv *pv, int vlen) {
    te_tensor *F = pv->t[3];
    if (ops__sched_elemwise(s, pv->t[4], vlen, NULL) || sch_compute_inline(s, pv->t[5]) ||
        ops__sched_register_tile(s, F, pv->t[1], 0, 6, vlen >= 16 ? 4 * vlen : 2 * vlen, vlen, true))
        return -1;
    return ops__sched_elemwise(s, pv->t[0], vlen, NULL);
}

/* The implicit GEMM in bfloat16 on a CPU with AVX512-BF16: the GEMM tile
 * on VDPBF16PS, W2 packed in the VNNI layout (pre-computed: the weights
 * are constant), Col stored, the copy into O. 1 where it does not apply. */
static int conv_sched_bf16_dot(const ops_workload *w, sch_schedule *s, const int64_t *p) {
    (void)p;
    const ops__priv *pv = w->priv;
    if (!pv->t[3]) return 1;
    int rc = ops__sched_register_tile_bf16_dot(s, pv->t[3], pv->t[1], 0, 6, 64);
    if (rc) return rc;
    if (ops__sched_elemwise(s, pv->t[4], 16, NULL)) return -1;
    return ops__sched_elemwise(s, pv->t[0], 16, NULL);
}

static int conv_sched(const ops_workload *w, sch_schedule *s, const int64_t *p, int vlen) {
    (void)p;
    const ops__priv *pv = w->priv;
    if (pv->t[3]) return gemm_sched(s, pv, vlen);
    if (pv->t[2] && ops__sched_pad(s, pv->t[2], vlen, NULL)) return -1;
    te_tensor *F = pv->t[0], *R = pv->t[0] == pv->t[1] ? NULL : pv->t[1];
    bool nhwc = F->ndim == 4 && pv->impl == &ops__conv2d_nhwc;
    if (nhwc) return ops__sched_register_tile(s, F, R, 2, 6, 2 * vlen, vlen, false);
    /* NCHW: vectors over output channels where they are whole vectors (the
     * image rows are often shorter than a register tile), else over the
     * row. A column tail pays off (ResNet-50 3x3: 3-17 % faster on AVX2;
     * 1x1 9-12 % fewer cycles since the write-back is a register
     * transpose, session 18; the strided stem 3-4 % since its padding runs
     * by rows, session 19). */
    int rc = ops__sched_packed_tile(s, F, R, 1, 2, 3, vlen);
    if (rc <= 0) return rc;
    return ops__sched_register_tile(s, F, R, 1, 6, 16, vlen, false);
}

/* The implicit GEMM (conv_build_gemm) on tensor cores: on sm_90 Hopper's
 * warpgroup MMA where its tiles divide the GEMM, else WMMA; then the copy
 * into O, 16 bytes a thread. wgmma's blocks from the H200 sweep of
 * ResNet-50's 3x3 layers at batch 16 (bench_tc_conv --layout nhwc;
 * bench/RESULTS.md, session 36): 128 rows where that makes a block for
 * each of the GPU's ~132 SMs (r50_c2: 128x64, three stages), else 64
 * rows in four stages (r50_c3 and c4: 64x128); on grids of under half
 * the SMs (batch 1) blocks 64 wide, twice as many (not yet measured). */
static int gemm_cuda(sch_schedule *s, const ops__priv *pv, const ops__gpu *gpu) {
    te_tensor *O = pv->t[0], *F = pv->t[3];
    int64_t M = F->shape[0], N = F->shape[1], K = pv->t[1]->body->u.reduce.axes[0]->u.var.extent;
    int bytes = te_dtype_bytes(F->dtype);
    ops_tc_config cfg = {.max_shared = gpu->smem}, wg;
    if (gpu->cc == 90) {
        int64_t bn = N % 128 == 0 ? 128 : 64;
        bool tall = M % 128 == 0 && (M / 128) * (N / bn) >= 132;
        if (!tall && bn == 128 && (M / 64) * (N / 128) < 66) bn = 64;
        ops_tc_config want = {.bm = tall ? 128 : 64, .bn = bn, .stages = tall ? 3 : 4,
                              .max_shared = gpu->smem, .wgmma = true};
        if (!ops__wgmma_complete(NULL, M, N, K, bytes, false, false, &want, &wg)) cfg = wg;
    }
    if (ops_schedule_tc_gemm(s, F, pv->t[4], pv->t[5], &cfg)) return -1;
    /* blocks of whole vectors (no guarded tail) where 32 to 256 threads
     * divide them */
    int64_t vecs = O->shape[0] * O->shape[1] * O->shape[2] * N / (16 / bytes), threads = 256;
    while (vecs % threads && threads > 32) threads--;
    if (vecs % threads) threads = 256;
    te_expr *ax[4], *f, *v, *bo, *ti;
    for (int d = 0; d < 4; d++)
        if (!(ax[d] = sch_axis(O, d))) return -1;
    return sch_fuse(s, O, 4, ax, &f) || sch_split(s, O, f, 16 / bytes, &f, &v) ||
                   sch_vectorize(s, O, v) || sch_split(s, O, f, threads, &bo, &ti) ||
                   sch_bind(s, O, bo, "blockIdx.x") || sch_bind(s, O, ti, "threadIdx.x")
               ? -1
               : 0;
}

/* CUDA: the direct-convolution tile; padding inlined (a select on the
 * read) so no kernel materialises it. */
static int conv_cuda(const ops_workload *w, sch_schedule *s, const int64_t *p,
                     const ops__gpu *gpu) {
    const ops__priv *pv = w->priv;
    if (pv->t[3]) return gemm_cuda(s, pv, gpu);
    te_tensor *F = pv->t[0], *R = pv->t[0] == pv->t[1] ? NULL : pv->t[1];
    ops__conv_io io = {w->inputs[0],    w->inputs[1],   pv->t[2],
                       p[CV_STRIDE],    p[CV_DIL],      p[CV_GROUPS],
                       pv->impl == &ops__conv2d_nhwc};
    return ops__cuda_conv(s, F, R, &io);
}

const ops__impl ops__conv2d_nchw = {
    .info = {"conv2d_nchw", "conv2d",
             "Y[N,K,OH,OW] = conv(X[N,C,H,W], W[K,C/groups,R,S]); OH = (H + 2 pad - "
             "dilation (R-1) - 1) / stride + 1",
             11,
             {CONV_PARAMS}},
    .check = nchw_check,
    .build = nchw_build,
    .reference = nchw_ref,
    .schedule = conv_sched,
    .cuda_schedule = conv_cuda,
    .half = true,
};

const ops__impl ops__conv2d_nhwc = {
    .info = {"conv2d_nhwc", NULL,
             "Y[N,OH,OW,K] = conv(X[N,H,W,C], W[R,S,C/groups,K]) (HWIO weights)", 11,
             {CONV_PARAMS}},
    .check = nhwc_check,
    .build = nhwc_build,
    .reference = nhwc_ref,
    .schedule = conv_sched,
    .schedule_bf16_dot = conv_sched_bf16_dot,
    .cuda_schedule = conv_cuda,
    .half = true,
};

const ops__impl ops__conv2d_bias_relu = {
    .info = {"conv2d_bias_relu", NULL,
             "Y = relu(conv2d_nchw(X, W) + bias[K]), one fused workload", 11, {CONV_PARAMS}},
    .check = cbr_check,
    .build = cbr_build,
    .reference = cbr_ref,
    .schedule = conv_sched,
    .cuda_schedule = conv_cuda,
};

/* ---- depthwise ---- */

static int dw_check(te_ctx *ctx, const int64_t *p) {
    return ops__check_window(ctx, "depthwise_conv2d_nchw", "H", p[DW_H], p[DW_R], p[DW_PAD],
                             p[DW_DIL]) ||
                   ops__check_window(ctx, "depthwise_conv2d_nchw", "W", p[DW_W], p[DW_S],
                                     p[DW_PAD], p[DW_DIL])
               ? -1
               : 0;
}

static int dw_build(te_ctx *ctx, ops_workload *w, ops__priv *pv, const int64_t *p) {
    int64_t N = p[DW_N], C = p[DW_C], H = p[DW_H], W = p[DW_W], R = p[DW_R], S = p[DW_S],
            st = p[DW_STRIDE], pad = p[DW_PAD], dil = p[DW_DIL];
    int64_t OH = ops__out_extent(H, R, st, pad, dil), OW = ops__out_extent(W, S, st, pad, dil);
    te_tensor *X = ops__input(ctx, w, "X", 4, (int64_t[]){N, C, H, W});
    te_tensor *Wt = ops__input(ctx, w, "W", 4, (int64_t[]){C, 1, R, S});
    te_tensor *P = X;
    if (pad > 0) P = pv->t[2] = ops__pad(ctx, X, 2, 3, pad, ops__const(ctx, w, 0));
    te_expr *n = te_axis(ctx, "n", N), *c = te_axis(ctx, "c", C), *y = te_axis(ctx, "y", OH),
            *x = te_axis(ctx, "x", OW);
    te_expr *rr = te_reduce_axis(ctx, "rr", R), *rs = te_reduce_axis(ctx, "rs", S);
    te_expr *iy = te_add(te_mul(y, te_int(ctx, st)), te_mul(rr, te_int(ctx, dil)));
    te_expr *ix = te_add(te_mul(x, te_int(ctx, st)), te_mul(rs, te_int(ctx, dil)));
    te_expr *prod = te_mul(te_read(P, n, c, iy, ix), te_read(Wt, c, te_int(ctx, 0), rr, rs));
    te_tensor *O = te_compute(ctx, "O", TE_AXES(n, c, y, x), te_sum(prod, rr, rs));
    double taps = (double)ops__real_taps(H, OH, R, st, pad, dil) *
                  (double)ops__real_taps(W, OW, S, st, pad, dil);
    w->flops = 2.0 * (double)N * (double)C * taps;
    pv->reduce_len = R * S;
    pv->t[0] = pv->t[1] = O;
    w->constant_args = 0x2; /* the weights */
    return ops__set_io(ctx, w, 2, (te_tensor *[]){X, Wt}, O);
}

static void dw_ref(const ops_workload *w, const int64_t *p, const double *const *in,
                   double *const *out) {
    (void)w;
    int64_t N = p[DW_N], C = p[DW_C], H = p[DW_H], W = p[DW_W], R = p[DW_R], S = p[DW_S],
            st = p[DW_STRIDE], pad = p[DW_PAD], dil = p[DW_DIL];
    int64_t OH = ops__out_extent(H, R, st, pad, dil), OW = ops__out_extent(W, S, st, pad, dil);
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t y = 0; y < OH; y++)
                for (int64_t x = 0; x < OW; x++) {
                    double acc = 0;
                    for (int64_t r = 0; r < R; r++)
                        for (int64_t s = 0; s < S; s++) {
                            int64_t iy = y * st - pad + r * dil, ix = x * st - pad + s * dil;
                            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                            acc += in[0][((n * C + c) * H + iy) * W + ix] *
                                   in[1][(c * R + r) * S + s];
                        }
                    out[0][((n * C + c) * OH + y) * OW + x] = acc;
                }
}

static int dw_sched(const ops_workload *w, sch_schedule *s, const int64_t *p, int vlen) {
    (void)p;
    const ops__priv *pv = w->priv;
    if (pv->t[2] && ops__sched_pad(s, pv->t[2], vlen, NULL)) return -1;
    return ops__sched_register_tile(s, pv->t[0], NULL, 2, 4, 16, vlen, false);
}

/* CUDA: one output per thread over a spatial tile; the R x S taps
 * serial in the thread. */
static int dw_cuda(const ops_workload *w, sch_schedule *s, const int64_t *p,
                   const ops__gpu *gpu) {
    (void)p;
    const ops__priv *pv = w->priv;
    return ops__cuda_spatial(s, pv->t[0], NULL, pv->t[2]);
}

const ops__impl ops__depthwise_conv2d_nchw = {
    .info = {"depthwise_conv2d_nchw", "depthwise_conv2d",
             "Y[N,C,OH,OW] = depthwise conv(X[N,C,H,W], W[C,1,R,S]) (channel multiplier 1)", 9,
             {EXT("N", "batch"), EXT("C", "channels"), EXT("H", "input height"),
              EXT("W", "input width"), EXT("R", "kernel height"), EXT("S", "kernel width"),
              DEF("stride", 1, 1, "stride of both spatial dimensions"),
              DEF("pad", 0, 0, "zero padding on each side of both spatial dimensions"),
              DEF("dilation", 1, 1, "kernel dilation")}},
    .check = dw_check,
    .build = dw_build,
    .reference = dw_ref,
    .schedule = dw_sched,
    .cuda_schedule = dw_cuda,
};
