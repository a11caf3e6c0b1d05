#include "sched_harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static void ref_matmul(const sched_case *c, DLTensor *const *ins, double *out) {
    int64_t M = c->p[0], N = c->p[1], K = c->p[2];
    const float *A = ins[0]->data, *B = ins[1]->data;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double acc = 0;
            for (int64_t k = 0; k < K; k++) acc += (double)A[i * K + k] * B[k * N + j];
            out[i * N + j] = acc;
        }
}

sched_case sh_matmul(te_ctx *ctx, int64_t M, int64_t N, int64_t K) {
    sched_case c = {.ctx = ctx, .nin = 2, .reference = ref_matmul, .p = {M, N, K}};
    te_tensor *A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(M, K));
    te_tensor *B = te_placeholder(ctx, "B", TE_FLOAT32, TE_SHAPE(K, N));
    te_expr *i = te_axis(ctx, "i", M), *j = te_axis(ctx, "j", N);
    te_expr *k = te_reduce_axis(ctx, "k", K);
    te_tensor *C = te_compute(ctx, "C", TE_AXES(i, j), te_sum(te_mul(te_read(A, i, k), te_read(B, k, j)), k));
    assert_non_null(C);
    c.in[0] = A;
    c.in[1] = B;
    c.out = C;
    c.ax[0] = i;
    c.ax[1] = j;
    c.rax[0] = k;
    return c;
}

static void ref_chain(const sched_case *c, DLTensor *const *ins, double *out) {
    int64_t n = c->p[0] * c->p[1];
    const float *A = ins[0]->data;
    for (int64_t i = 0; i < n; i++) {
        double b = (double)A[i] * 2 + 1;
        out[i] = exp(b) * 0.5 - b;
    }
}

sched_case sh_chain(te_ctx *ctx, int64_t M, int64_t N) {
    sched_case c = {.ctx = ctx, .nin = 1, .reference = ref_chain, .p = {M, N}};
    te_tensor *A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(M, N));
    te_expr *i = te_axis(ctx, "i", M), *j = te_axis(ctx, "j", N);
    te_tensor *B = te_compute(ctx, "B", TE_AXES(i, j),
                              te_add(te_mul(te_read(A, i, j), te_float(ctx, 2)), te_float(ctx, 1)));
    te_expr *x = te_axis(ctx, "x", M), *y = te_axis(ctx, "y", N);
    te_tensor *C = te_compute(ctx, "C", TE_AXES(x, y),
                              te_sub(te_mul(te_exp(te_read(B, x, y)), te_float(ctx, 0.5)),
                                     te_read(B, x, y)));
    assert_non_null(C);
    c.in[0] = A;
    c.out = C;
    c.mid = B;
    c.ax[0] = x;
    c.ax[1] = y;
    return c;
}

static void ref_conv(const sched_case *c, DLTensor *const *ins, double *out) {
    int64_t N = c->p[0], C = c->p[1], H = c->p[2], W = c->p[3], K = c->p[4], R = c->p[5],
            S = c->p[6], st = c->p[7];
    int64_t pad = c->p[8];
    int64_t OH = (H + 2 * pad - R) / st + 1, OW = (W + 2 * pad - S) / st + 1;
    const float *X = ins[0]->data, *Wt = ins[1]->data;
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t y = 0; y < OH; y++)
                for (int64_t x = 0; x < OW; x++) {
                    double acc = 0;
                    for (int64_t ci = 0; ci < C; ci++)
                        for (int64_t r = 0; r < R; r++)
                            for (int64_t s = 0; s < S; s++) {
                                int64_t iy = y * st + r - pad, ix = x * st + s - pad;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                                acc += (double)X[((n * C + ci) * H + iy) * W + ix] *
                                       Wt[((k * C + ci) * R + r) * S + s];
                            }
                    out[((n * K + k) * OH + y) * OW + x] = acc;
                }
}

sched_case sh_conv2d(te_ctx *ctx, int64_t N, int64_t C, int64_t H, int64_t W, int64_t K,
                     int64_t R, int64_t S, int64_t stride, int64_t pad) {
    sched_case c = {.ctx = ctx, .nin = 2, .reference = ref_conv,
                    .p = {N, C, H, W, K, R, S, stride, pad}};
    int64_t PH = H + 2 * pad, PW = W + 2 * pad;
    int64_t OH = (PH - R) / stride + 1, OW = (PW - S) / stride + 1;
    te_tensor *X = te_placeholder(ctx, "X", TE_FLOAT32, TE_SHAPE(N, C, H, W));
    te_tensor *Wt = te_placeholder(ctx, "W", TE_FLOAT32, TE_SHAPE(K, C, R, S));
    te_expr *pn = te_axis(ctx, "pn", N), *pc = te_axis(ctx, "pc", C),
            *py = te_axis(ctx, "py", PH), *px = te_axis(ctx, "px", PW);
    te_expr *inside = te_and(te_and(te_ge(py, te_int(ctx, pad)), te_lt(py, te_int(ctx, H + pad))),
                             te_and(te_ge(px, te_int(ctx, pad)), te_lt(px, te_int(ctx, W + pad))));
    te_expr *iy = te_sub(py, te_int(ctx, pad)), *ix = te_sub(px, te_int(ctx, pad));
    /* Clamp so that the read is in bounds on both sides of the select. */
    iy = te_max(te_min(iy, te_int(ctx, H - 1)), te_int(ctx, 0));
    ix = te_max(te_min(ix, te_int(ctx, W - 1)), te_int(ctx, 0));
    te_tensor *P = te_compute(ctx, "Pad", TE_AXES(pn, pc, py, px),
                              te_select(inside, te_read(X, pn, pc, iy, ix), te_float(ctx, 0)));
    te_expr *n = te_axis(ctx, "n", N), *k = te_axis(ctx, "k", K), *y = te_axis(ctx, "y", OH),
            *x = te_axis(ctx, "x", OW);
    te_expr *rc = te_reduce_axis(ctx, "rc", C), *rr = te_reduce_axis(ctx, "rr", R),
            *rs = te_reduce_axis(ctx, "rs", S);
    te_expr *yy = te_add(te_mul(y, te_int(ctx, stride)), rr);
    te_expr *xx = te_add(te_mul(x, te_int(ctx, stride)), rs);
    te_tensor *O = te_compute(ctx, "O", TE_AXES(n, k, y, x),
                              te_sum(te_mul(te_read(P, n, rc, yy, xx), te_read(Wt, k, rc, rr, rs)),
                                     rc, rr, rs));
    assert_non_null(O);
    c.in[0] = X;
    c.in[1] = Wt;
    c.out = O;
    c.mid = P;
    c.ax[0] = n;
    c.ax[1] = k;
    c.ax[2] = y;
    c.ax[3] = x;
    c.rax[0] = rc;
    c.rax[1] = rr;
    c.rax[2] = rs;
    return c;
}

int64_t sh_run(const sched_case *c, sch_schedule *s, const char *target) {
    return sh_run_opts(c, s, target, NULL);
}

int64_t sh_run_opts(const sched_case *c, sch_schedule *s, const char *target,
                    const cg_build_options *opts) {
    uint64_t rng = tu_seed() ^ (uint64_t)c->out->shape[0] * 7919u;
    te_tensor *args[5];
    for (int i = 0; i < c->nin; i++) args[i] = c->in[i];
    args[c->nin] = c->out;
    rt_module *m = cg_build(s, c->nin + 1, args, target, opts);
    if (!m) {
        fprintf(stderr, "build (%s) failed: %s\n", target, te_ctx_errmsg(c->ctx));
        return -1;
    }
    DLTensor *ts[5];
    for (int i = 0; i < c->nin; i++) ts[i] = tu_rand_f32(&rng, c->in[i]->ndim, c->in[i]->shape);
    ts[c->nin] = tu_nan_f32(c->out->ndim, c->out->shape);
    int64_t n = rt_tensor_numel(ts[c->nin]);
    double *want = malloc(sizeof(double) * (size_t)n);
    c->reference(c, ts, want);
    int64_t bad = -1;
    if (rt_call(m, "default", c->nin + 1, ts)) {
        fprintf(stderr, "run (%s) failed: %s\n", target, rt_module_errmsg(m));
    } else {
        double red = 1;
        if (c->out->body && c->out->body->kind == TE_REDUCE)
            for (int k = 0; k < c->out->body->u.reduce.naxes; k++)
                red *= (double)c->out->body->u.reduce.axes[k]->u.var.extent;
        bad = tu_compare_f32(target, ts[c->nin]->data, want, n, 1e-5 * sqrt(red) + 1e-5, 1e-4);
    }
    free(want);
    for (int i = 0; i <= c->nin; i++) rt_tensor_free(ts[i]);
    rt_module_free(m);
    return bad;
}
