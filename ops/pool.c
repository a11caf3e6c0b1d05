/*
 * ops/pool.c — max_pool2d, avg_pool2d (NCHW, square stride and padding)
 * and global_avg_pool2d.
 *
 * Padding never wins a max (it is -inf) and is not counted by the average
 * (count_include_pad false, TVM's and PyTorch's default for this
 * choice). Padding must be smaller than the kernel, so every window holds
 * at least one input element. Default CPU schedule: the padded input
 * materialised; the window reduction as a register tile of output rows x
 * 16 columns; the average's divide computed on the finished tile.
 */
#include <math.h>

#include "ops_internal.h"

#define EXT(n, d) {n, true, 0, 1, OPS__BIG, d}
#define DEF(n, v, lo, d) {n, false, v, lo, OPS__BIG, d}

enum { PL_N, PL_C, PL_H, PL_W, PL_R, PL_S, PL_STRIDE, PL_PAD };

#define POOL_PARAMS                                                                         \
    EXT("N", "batch"), EXT("C", "channels"), EXT("H", "input height"),                      \
        EXT("W", "input width"), EXT("R", "window height"), EXT("S", "window width"),       \
        DEF("stride", 1, 1, "stride of both spatial dimensions"),                           \
        DEF("pad", 0, 0, "padding on each side of both spatial dimensions (< the window)")

static int pool_check(te_ctx *ctx, const char *op, const int64_t *p) {
    if (ops__check_window(ctx, op, "H", p[PL_H], p[PL_R], p[PL_PAD], 1) ||
        ops__check_window(ctx, op, "W", p[PL_W], p[PL_S], p[PL_PAD], 1))
        return -1;
    if (p[PL_PAD] >= p[PL_R] || p[PL_PAD] >= p[PL_S])
        return te_error(ctx, "ops: %s: pad=%lld must be smaller than the window %lldx%lld", op,
                        (long long)p[PL_PAD], (long long)p[PL_R], (long long)p[PL_S]);
    return 0;
}
static int max_check(te_ctx *ctx, const int64_t *p) { return pool_check(ctx, "max_pool2d", p); }
static int avg_check(te_ctx *ctx, const int64_t *p) { return pool_check(ctx, "avg_pool2d", p); }

/* t[0] = output, t[1] = window reduction, t[2] = Pad. */
static int pool_build(te_ctx *ctx, ops_workload *w, ops__priv *pv, const int64_t *p, bool avg) {
    int64_t N = p[PL_N], C = p[PL_C], H = p[PL_H], W = p[PL_W], R = p[PL_R], S = p[PL_S],
            st = p[PL_STRIDE], pad = p[PL_PAD];
    int64_t OH = ops__out_extent(H, R, st, pad, 1), OW = ops__out_extent(W, S, st, pad, 1);
    te_tensor *X = ops__input(ctx, w, "X", 4, (int64_t[]){N, C, H, W});
    te_tensor *P = X;
    if (pad > 0) {
        te_expr *fill = avg ? ops__const(ctx, w, 0) : te_reduce_identity(ctx, TE_REDUCE_MAX, w->dtype);
        P = pv->t[2] = ops__pad(ctx, X, 2, 3, pad, fill);
    }
    te_expr *n = te_axis(ctx, "n", N), *c = te_axis(ctx, "c", C), *y = te_axis(ctx, "y", OH),
            *x = te_axis(ctx, "x", OW);
    te_expr *rr = te_reduce_axis(ctx, "rr", R), *rs = te_reduce_axis(ctx, "rs", S);
    te_expr *v = te_read(P, n, c, te_add(te_mul(y, te_int(ctx, st)), rr),
                         te_add(te_mul(x, te_int(ctx, st)), rs));
    te_tensor *O = te_compute(ctx, avg ? "Sum" : "O", TE_AXES(n, c, y, x),
                              avg ? te_sum(v, rr, rs) : te_rmax(v, rr, rs));
    double taps = (double)ops__real_taps(H, OH, R, st, pad, 1) *
                  (double)ops__real_taps(W, OW, S, st, pad, 1);
    w->flops = (double)N * (double)C * taps;
    pv->reduce_len = R * S;
    pv->t[0] = pv->t[1] = O;
    if (!avg) return ops__set_io(ctx, w, 1, (te_tensor *[]){X}, O);
    te_expr *yn = te_axis(ctx, "yn", N), *yc = te_axis(ctx, "yc", C), *yy = te_axis(ctx, "yy", OH),
            *yx = te_axis(ctx, "yx", OW);
    /* Taps inside the input: min(start + R, H) - max(start, 0) per dimension. */
    te_expr *sy = te_sub(te_mul(yy, te_int(ctx, st)), te_int(ctx, pad));
    te_expr *sx = te_sub(te_mul(yx, te_int(ctx, st)), te_int(ctx, pad));
    te_expr *cy = te_sub(te_min(te_add(sy, te_int(ctx, R)), te_int(ctx, H)), te_max(sy, te_int(ctx, 0)));
    te_expr *cx = te_sub(te_min(te_add(sx, te_int(ctx, S)), te_int(ctx, W)), te_max(sx, te_int(ctx, 0)));
    te_expr *cnt = te_cast(w->dtype, te_mul(cy, cx));
    te_tensor *Y = te_compute(ctx, "Y", TE_AXES(yn, yc, yy, yx),
                              te_div(te_read(O, yn, yc, yy, yx), cnt));
    w->flops += (double)(N * C * OH * OW);
    pv->t[0] = Y;
    return ops__set_io(ctx, w, 1, (te_tensor *[]){X}, Y);
}
static int max_build(te_ctx *ctx, ops_workload *w, ops__priv *pv, const int64_t *p) {
    return pool_build(ctx, w, pv, p, false);
}
static int avg_build(te_ctx *ctx, ops_workload *w, ops__priv *pv, const int64_t *p) {
    return pool_build(ctx, w, pv, p, true);
}

static void pool_ref(const int64_t *p, const double *X, double *out, bool avg) {
    int64_t N = p[PL_N], C = p[PL_C], H = p[PL_H], W = p[PL_W], R = p[PL_R], S = p[PL_S],
            st = p[PL_STRIDE], pad = p[PL_PAD];
    int64_t OH = ops__out_extent(H, R, st, pad, 1), OW = ops__out_extent(W, S, st, pad, 1);
    for (int64_t nc = 0; nc < N * C; nc++)
        for (int64_t y = 0; y < OH; y++)
            for (int64_t x = 0; x < OW; x++) {
                double acc = avg ? 0 : -INFINITY;
                int64_t cnt = 0;
                for (int64_t r = 0; r < R; r++)
                    for (int64_t s = 0; s < S; s++) {
                        int64_t iy = y * st - pad + r, ix = x * st - pad + s;
                        if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                        double v = X[(nc * H + iy) * W + ix];
                        acc = avg ? acc + v : (v > acc ? v : acc);
                        cnt++;
                    }
                out[(nc * OH + y) * OW + x] = avg ? acc / (double)cnt : acc;
            }
}
static void max_ref(const ops_workload *w, const int64_t *p, const double *const *in,
                    double *const *out) {
    (void)w;
    pool_ref(p, in[0], out[0], false);
}
static void avg_ref(const ops_workload *w, const int64_t *p, const double *const *in,
                    double *const *out) {
    (void)w;
    pool_ref(p, in[0], out[0], true);
}

static int pool_sched(const ops_workload *w, sch_schedule *s, const int64_t *p, int vlen) {
    (void)p;
    const ops__priv *pv = w->priv;
    if (pv->t[2] && ops__sched_pad(s, pv->t[2], vlen, NULL)) return -1;
    te_tensor *R = pv->t[0] == pv->t[1] ? NULL : pv->t[1];
    return ops__sched_register_tile(s, pv->t[0], R, 2, 4, 16, vlen, false);
}

/* CUDA: one output per thread over a spatial tile, the window serial in
 * the thread, padding inlined; the average's divide on the thread's sum. */
static int pool_cuda(const ops_workload *w, sch_schedule *s, const int64_t *p,
                     const ops__gpu *gpu) {
    (void)p;
    const ops__priv *pv = w->priv;
    te_tensor *R = pv->t[0] == pv->t[1] ? NULL : pv->t[1];
    return ops__cuda_spatial(s, pv->t[0], R, pv->t[2]);
}

const ops__impl ops__max_pool2d = {
    .info = {"max_pool2d", NULL, "Y[N,C,OH,OW] = max over R x S windows of X[N,C,H,W]", 8,
             {POOL_PARAMS}},
    .check = max_check,
    .build = max_build,
    .reference = max_ref,
    .schedule = pool_sched,
    .cuda_schedule = pool_cuda,
};

const ops__impl ops__avg_pool2d = {
    .info = {"avg_pool2d", NULL,
             "Y[N,C,OH,OW] = mean over R x S windows of X[N,C,H,W] (padding not counted)", 8,
             {POOL_PARAMS}},
    .check = avg_check,
    .build = avg_build,
    .reference = avg_ref,
    .schedule = pool_sched,
    .cuda_schedule = pool_cuda,
};

/* ---- global average pool ---- */

static int gap_build(te_ctx *ctx, ops_workload *w, ops__priv *pv, const int64_t *p) {
    int64_t N = p[0], C = p[1], H = p[2], W = p[3];
    te_tensor *X = ops__input(ctx, w, "X", 4, (int64_t[]){N, C, H, W});
    te_expr *n = te_axis(ctx, "n", N), *c = te_axis(ctx, "c", C);
    te_expr *rh = te_reduce_axis(ctx, "rh", H), *rw = te_reduce_axis(ctx, "rw", W);
    te_tensor *Sm = te_compute(ctx, "Sum", TE_AXES(n, c), te_sum(te_read(X, n, c, rh, rw), rh, rw));
    te_expr *yn = te_axis(ctx, "yn", N), *yc = te_axis(ctx, "yc", C);
    te_tensor *Y = te_compute(ctx, "Y", TE_AXES(yn, yc),
                              te_div(te_read(Sm, yn, yc), ops__const(ctx, w, (double)(H * W))));
    w->flops = (double)(N * C * H * W) + (double)(N * C);
    pv->reduce_len = H * W;
    pv->t[0] = Y;
    pv->t[1] = Sm;
    return ops__set_io(ctx, w, 1, (te_tensor *[]){X}, Y);
}

static void gap_ref(const ops_workload *w, const int64_t *p, const double *const *in,
                    double *const *out) {
    (void)w;
    int64_t NC = p[0] * p[1], HW = p[2] * p[3];
    for (int64_t i = 0; i < NC; i++) {
        double acc = 0;
        for (int64_t k = 0; k < HW; k++) acc += in[0][i * HW + k];
        out[0][i] = acc / (double)HW;
    }
}

static int gap_sched(const ops_workload *w, sch_schedule *s, const int64_t *p, int vlen) {
    (void)p;
    const ops__priv *pv = w->priv;
    te_expr *par;
    /* The sums read each channel's plane contiguously; the divide is
     * vectorized over channels. */
    if (ops__sched_elemwise(s, pv->t[0], vlen, &par)) return -1;
    return sch_compute_at(s, pv->t[1], pv->t[0], par);
}

/* CUDA: one thread per (n, c), summing its plane serially. */
static int gap_cuda(const ops_workload *w, sch_schedule *s, const int64_t *p,
                    const ops__gpu *gpu) {
    (void)p;
    const ops__priv *pv = w->priv;
    return ops__cuda_flat_reduce(s, pv->t[0], pv->t[1]);
}

const ops__impl ops__global_avg_pool2d = {
    .info = {"global_avg_pool2d", NULL, "Y[N,C] = mean of X[N,C,H,W] over H and W", 4,
             {EXT("N", "batch"), EXT("C", "channels"), EXT("H", "input height"),
              EXT("W", "input width")}},
    .build = gap_build,
    .reference = gap_ref,
    .schedule = gap_sched,
    .cuda_schedule = gap_cuda,
};
