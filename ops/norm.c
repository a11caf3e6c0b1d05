/*
 * ops/norm.c — softmax over the last axis (numerically stable: row max,
 * exp of the shifted values, their sum, a divide — four stages) and
 * layer_norm over the last axis (two-pass mean and biased variance, as
 * PyTorch's LayerNorm, eps 1e-5).
 *
 * Default CPU schedule: rows parallel; each row's reductions computed
 * inside the row loop of their consumer (compute_at), so a row stays in
 * cache between the stages, and rfactored into vectors of partial results
 * (ops__sched_row_reduce); the elementwise stages vectorized.
 */
#include <math.h>

#include "ops_internal.h"

#define EXT(n, d) {n, true, 0, 1, OPS__BIG, d}
#define LN_EPS 1e-5

static int softmax_build(te_ctx *ctx, ops_workload *w, ops__priv *pv, const int64_t *p) {
    int64_t M = p[0], N = p[1];
    te_tensor *X = ops__input(ctx, w, "X", 2, (int64_t[]){M, N});
    te_expr *i = te_axis(ctx, "i", M), *k = te_reduce_axis(ctx, "k", N);
    te_tensor *Mx = te_compute(ctx, "Max", TE_AXES(i), te_rmax(te_read(X, i, k), k));
    te_expr *ei = te_axis(ctx, "ei", M), *ej = te_axis(ctx, "ej", N);
    te_tensor *E = te_compute(ctx, "Exp", TE_AXES(ei, ej),
                              te_exp(te_sub(te_read(X, ei, ej), te_read(Mx, ei))));
    te_expr *si = te_axis(ctx, "si", M), *sk = te_reduce_axis(ctx, "sk", N);
    te_tensor *Sm = te_compute(ctx, "Sum", TE_AXES(si), te_sum(te_read(E, si, sk), sk));
    te_expr *yi = te_axis(ctx, "yi", M), *yj = te_axis(ctx, "yj", N);
    te_tensor *Y = te_compute(ctx, "Y", TE_AXES(yi, yj), te_div(te_read(E, yi, yj), te_read(Sm, yi)));
    w->flops = 5.0 * (double)M * (double)N;
    pv->reduce_len = N;
    pv->t[0] = Y, pv->t[1] = Mx, pv->t[2] = E, pv->t[3] = Sm;
    return ops__set_io(ctx, w, 1, (te_tensor *[]){X}, Y);
}

static void softmax_ref(const ops_workload *w, const int64_t *p, const double *const *in,
                        double *const *out) {
    (void)w;
    int64_t M = p[0], N = p[1];
    for (int64_t i = 0; i < M; i++) {
        const double *x = in[0] + i * N;
        double *y = out[0] + i * N, mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < N; j++) mx = x[j] > mx ? x[j] : mx;
        for (int64_t j = 0; j < N; j++) sum += y[j] = exp(x[j] - mx);
        for (int64_t j = 0; j < N; j++) y[j] /= sum;
    }
}

/* Y's last axis split by the vector width and vectorized, its rows
 * parallel; returns the row axis. */
static te_expr *rows_parallel(sch_schedule *s, te_tensor *Y, int vlen) {
    te_expr *i = sch_axis(Y, 0), *j = sch_axis(Y, 1), *jo, *ji;
    if (!i || !j) return NULL;
    int64_t f = Y->shape[1] < vlen ? Y->shape[1] : vlen;
    if (sch_split(s, Y, j, f, &jo, &ji) || sch_vectorize(s, Y, ji) || sch_parallel(s, Y, i))
        return NULL;
    return i;
}

static int softmax_sched(const ops_workload *w, sch_schedule *s, const int64_t *p, int vlen) {
    (void)p;
    const ops__priv *pv = w->priv;
    te_tensor *Y = pv->t[0], *E = pv->t[2];
    te_expr *i = rows_parallel(s, Y, vlen);
    if (!i) return -1;
    /* Exp has two consumers (Sum and Y), so it stays at the root with its
     * rows parallel; Max goes into Exp's row loop, Sum into Y's. */
    if (ops__sched_row_reduce(s, pv->t[3], Y, i, vlen)) return -1;
    te_expr *ei = rows_parallel(s, E, vlen);
    if (!ei) return -1;
    return ops__sched_row_reduce(s, pv->t[1], E, ei, vlen);
}

/* CUDA: three kernels — the row maxima (one thread per row), the row sums
 * of exp(x - max) (Exp inlined into both readers, so never stored), and
 * the elementwise divide (one thread per element). */
static int softmax_cuda(const ops_workload *w, sch_schedule *s, const int64_t *p,
                        const ops__gpu *gpu) {
    (void)p;
    const ops__priv *pv = w->priv;
    return sch_compute_inline(s, pv->t[2]) || ops__cuda_rows(s, pv->t[1]) ||
                   ops__cuda_rows(s, pv->t[3]) || ops__cuda_flat(s, pv->t[0], 256, NULL)
               ? -1
               : 0;
}

const ops__impl ops__softmax = {
    .info = {"softmax", NULL, "Y[M,N] = softmax of X[M,N] over the last axis (stable)", 2,
             {EXT("M", "rows"), EXT("N", "length of the normalised axis")}},
    .build = softmax_build,
    .reference = softmax_ref,
    .schedule = softmax_sched,
    .cuda_schedule = softmax_cuda,
};

/* ---- layer_norm ---- */

static int ln_build(te_ctx *ctx, ops_workload *w, ops__priv *pv, const int64_t *p) {
    int64_t M = p[0], N = p[1];
    te_tensor *X = ops__input(ctx, w, "X", 2, (int64_t[]){M, N});
    te_tensor *G = ops__input(ctx, w, "gamma", 1, (int64_t[]){N});
    te_tensor *B = ops__input(ctx, w, "beta", 1, (int64_t[]){N});
    te_expr *inv_n = ops__const(ctx, w, 1.0 / (double)N);
    te_expr *i = te_axis(ctx, "i", M), *k = te_reduce_axis(ctx, "k", N);
    te_tensor *S1 = te_compute(ctx, "Sum", TE_AXES(i), te_sum(te_read(X, i, k), k));
    te_expr *vi = te_axis(ctx, "vi", M), *vk = te_reduce_axis(ctx, "vk", N);
    te_expr *d = te_sub(te_read(X, vi, vk), te_mul(te_read(S1, vi), inv_n));
    te_tensor *S2 = te_compute(ctx, "SqSum", TE_AXES(vi), te_sum(te_mul(d, d), vk));
    te_expr *yi = te_axis(ctx, "yi", M), *yj = te_axis(ctx, "yj", N);
    te_expr *mean = te_mul(te_read(S1, yi), inv_n);
    te_expr *rstd = te_div(ops__const(ctx, w, 1.0),
                           te_sqrt(te_add(te_mul(te_read(S2, yi), inv_n), ops__const(ctx, w, LN_EPS))));
    te_expr *v = te_add(te_mul(te_mul(te_sub(te_read(X, yi, yj), mean), rstd), te_read(G, yj)),
                        te_read(B, yj));
    te_tensor *Y = te_compute(ctx, "Y", TE_AXES(yi, yj), v);
    w->flops = 8.0 * (double)M * (double)N + 4.0 * (double)M;
    pv->reduce_len = N;
    pv->t[0] = Y, pv->t[1] = S1, pv->t[2] = S2;
    return ops__set_io(ctx, w, 3, (te_tensor *[]){X, G, B}, Y);
}

static void ln_ref(const ops_workload *w, const int64_t *p, const double *const *in,
                   double *const *out) {
    (void)w;
    int64_t M = p[0], N = p[1];
    for (int64_t i = 0; i < M; i++) {
        const double *x = in[0] + i * N;
        double mean = 0, var = 0;
        for (int64_t j = 0; j < N; j++) mean += x[j];
        mean /= (double)N;
        for (int64_t j = 0; j < N; j++) var += (x[j] - mean) * (x[j] - mean);
        var /= (double)N;
        double rstd = 1.0 / sqrt(var + LN_EPS);
        for (int64_t j = 0; j < N; j++)
            out[0][i * N + j] = (x[j] - mean) * rstd * in[1][j] + in[2][j];
    }
}

static int ln_sched(const ops_workload *w, sch_schedule *s, const int64_t *p, int vlen) {
    (void)p;
    const ops__priv *pv = w->priv;
    te_expr *i = rows_parallel(s, pv->t[0], vlen);
    if (!i) return -1;
    /* Sum has two consumers (SqSum and Y): it stays at the root, rows
     * parallel; SqSum goes into Y's row loop. */
    return ops__sched_row_reduce(s, pv->t[2], pv->t[0], i, vlen) ||
           ops__sched_row_reduce(s, pv->t[1], NULL, NULL, vlen);
}

/* CUDA: the row sums and the row sums of squared deviations (one thread
 * per row each), then the normalisation (one thread per element). */
static int ln_cuda(const ops_workload *w, sch_schedule *s, const int64_t *p,
                   const ops__gpu *gpu) {
    (void)p;
    const ops__priv *pv = w->priv;
    return ops__cuda_rows(s, pv->t[1]) || ops__cuda_rows(s, pv->t[2]) ||
                   ops__cuda_flat(s, pv->t[0], 256, NULL)
               ? -1
               : 0;
}

const ops__impl ops__layer_norm = {
    .info = {"layer_norm", NULL,
             "Y[M,N] = (X - mean) / sqrt(var + 1e-5) * gamma[N] + beta[N] over the last axis", 2,
             {EXT("M", "rows"), EXT("N", "length of the normalised axis")}},
    .build = ln_build,
    .reference = ln_ref,
    .schedule = ln_sched,
    .cuda_schedule = ln_cuda,
};
