/*
 * ops/build_util.c — shorthands the operator files share to declare
 * computations: inputs, padding stages, window extents, checks.
 */
#include <math.h>

#include "ops_internal.h"

te_tensor *ops__input(te_ctx *ctx, ops_workload *w, const char *name, int ndim,
                      const int64_t *shape) {
    return te_placeholder(ctx, name, w->dtype, ndim, shape);
}

int ops__set_io(te_ctx *ctx, ops_workload *w, int n, te_tensor *const *ins, te_tensor *out) {
    if (!out) return -1;
    w->inputs = te_alloc(ctx, sizeof(te_tensor *) * (size_t)n);
    w->outs = te_alloc(ctx, sizeof(te_tensor *));
    if (!w->inputs || !w->outs) return -1;
    for (int i = 0; i < n; i++) {
        if (!ins[i]) return -1;
        w->inputs[i] = ins[i];
    }
    w->ninputs = n;
    w->outs[0] = out;
    w->nouts = 1;
    return 0;
}

te_tensor *ops__cast_output(te_ctx *ctx, te_dtype dtype, te_tensor *acc, const char *name) {
    if (!acc) return NULL;
    static const char *names[4] = {"o0", "o1", "o2", "o3"};
    te_expr *ax[4];
    for (int d = 0; d < acc->ndim && d < 4; d++) ax[d] = te_axis(ctx, names[d], acc->shape[d]);
    return te_compute(ctx, name, acc->ndim, ax, te_cast(dtype, te_read_n(acc, acc->ndim, ax)));
}

te_expr *ops__const(te_ctx *ctx, const ops_workload *w, double v) {
    return te_const(ctx, w->dtype, v);
}

te_tensor *ops__pad(te_ctx *ctx, te_tensor *X, int hd, int wd, int64_t pad, te_expr *value) {
    if (!X) return NULL;
    static const char *names[4] = {"p0", "p1", "p2", "p3"};
    te_expr *ax[4], *idx[4];
    int64_t H = X->shape[hd], W = X->shape[wd];
    for (int d = 0; d < 4; d++) {
        int64_t ext = X->shape[d] + (d == hd || d == wd ? 2 * pad : 0);
        ax[d] = te_axis(ctx, names[d], ext);
        idx[d] = ax[d];
    }
    te_expr *py = ax[hd], *px = ax[wd];
    te_expr *inside =
        te_and(te_and(te_ge(py, te_int(ctx, pad)), te_lt(py, te_int(ctx, H + pad))),
               te_and(te_ge(px, te_int(ctx, pad)), te_lt(px, te_int(ctx, W + pad))));
    /* Clamped so the read stays in bounds whichever side the select takes
     * (both sides are evaluated, and vectorized code loads them). */
    idx[hd] = te_max(te_min(te_sub(py, te_int(ctx, pad)), te_int(ctx, H - 1)), te_int(ctx, 0));
    idx[wd] = te_max(te_min(te_sub(px, te_int(ctx, pad)), te_int(ctx, W - 1)), te_int(ctx, 0));
    return te_compute(ctx, "Pad", 4, ax, te_select(inside, te_read_n(X, 4, idx), value));
}

int64_t ops__out_extent(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dil) {
    return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1;
}

int64_t ops__real_taps(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad,
                       int64_t dil) {
    int64_t n = 0;
    for (int64_t y = 0; y < out; y++)
        for (int64_t r = 0; r < k; r++) {
            int64_t iy = y * stride - pad + r * dil;
            n += iy >= 0 && iy < in;
        }
    return n;
}

te_expr *ops__gelu_expr(te_ctx *ctx, const ops_workload *w, te_expr *x) {
    te_expr *e = te_erf(te_mul(x, ops__const(ctx, w, M_SQRT1_2)));
    return te_mul(te_mul(x, ops__const(ctx, w, 0.5)), te_add(e, ops__const(ctx, w, 1.0)));
}

double ops__gelu_ref(double x) { return 0.5 * x * (1.0 + erf(x * M_SQRT1_2)); }

int ops__check_window(te_ctx *ctx, const char *op, const char *dim, int64_t in, int64_t k,
                      int64_t pad, int64_t dil) {
    int64_t span = dil * (k - 1) + 1;
    if (span > in + 2 * pad)
        return te_error(ctx,
                        "ops: %s: kernel extent %lld along %s (dilated: %lld) is larger than the "
                        "padded input %lld (%s=%lld, pad=%lld)",
                        op, (long long)k, dim, (long long)span, (long long)(in + 2 * pad), dim,
                        (long long)in, (long long)pad);
    return 0;
}
