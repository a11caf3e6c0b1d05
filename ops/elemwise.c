/*
 * ops/elemwise.c — unary relu, gelu, sigmoid and binary add, mul with
 * numpy broadcasting, all on rank-4 shapes [D0,D1,D2,D3] (trailing
 * extents default to 1, so a rank-1 or rank-2 tensor is D0=.. or D0,D1).
 *
 * Default CPU schedule: the last axis split by the vector width and
 * vectorized, every outer loop fused into one parallel loop.
 */
#include <math.h>

#include "ops_internal.h"

#define EXT(n, d) {n, true, 0, 1, OPS__BIG, d}
#define EXT1(n, d) {n, false, 1, 1, OPS__BIG, d}
#define DIMS EXT("D0", "extent of dimension 0"), EXT1("D1", "extent of dimension 1"), \
    EXT1("D2", "extent of dimension 2"), EXT1("D3", "extent of dimension 3")

enum { EW_D0, EW_D1, EW_D2, EW_D3, EW_ABC, EW_BBC };
enum { UN_RELU, UN_GELU, UN_SIGMOID, BIN_ADD, BIN_MUL };

static int op_kind(const ops_workload *w) {
    const ops__impl *im = ((const ops__priv *)w->priv)->impl;
    return im == &ops__relu ? UN_RELU : im == &ops__gelu ? UN_GELU : im == &ops__sigmoid ? UN_SIGMOID
           : im == &ops__add ? BIN_ADD : BIN_MUL;
}

static int ew_build(te_ctx *ctx, ops_workload *w, ops__priv *pv, const int64_t *p) {
    int kind = op_kind(w);
    static const char *names[4] = {"d0", "d1", "d2", "d3"};
    te_expr *ax[4];
    for (int d = 0; d < 4; d++) ax[d] = te_axis(ctx, names[d], p[d]);
    int64_t numel = p[0] * p[1] * p[2] * p[3];
    if (kind <= UN_SIGMOID) {
        te_tensor *X = ops__input(ctx, w, "X", 4, p);
        te_expr *x = te_read_n(X, 4, ax), *v;
        if (kind == UN_RELU) v = te_max(x, ops__const(ctx, w, 0));
        else if (kind == UN_GELU) v = ops__gelu_expr(ctx, w, x);
        else v = te_sigmoid(x);
        w->flops = (double)numel * (kind == UN_RELU ? 1 : kind == UN_GELU ? 5 : 3);
        te_tensor *Y = te_compute(ctx, "Y", 4, ax, v);
        pv->t[0] = Y;
        return ops__set_io(ctx, w, 1, (te_tensor *[]){X}, Y);
    }
    te_tensor *in[2];
    te_expr *rd[2];
    for (int o = 0; o < 2; o++) {
        int64_t mask = p[EW_ABC + o], shape[4];
        te_expr *idx[4];
        for (int d = 0; d < 4; d++) {
            bool b = (mask >> d) & 1;
            shape[d] = b ? 1 : p[d];
            idx[d] = b ? te_int(ctx, 0) : ax[d];
        }
        in[o] = ops__input(ctx, w, o ? "B" : "A", 4, shape);
        rd[o] = te_read_n(in[o], 4, idx);
    }
    te_expr *v = kind == BIN_ADD ? te_add(rd[0], rd[1]) : te_mul(rd[0], rd[1]);
    te_tensor *Y = te_compute(ctx, "Y", 4, ax, v);
    w->flops = (double)numel;
    pv->t[0] = Y;
    return ops__set_io(ctx, w, 2, in, Y);
}

static void ew_ref(const ops_workload *w, const int64_t *p, const double *const *in,
                   double *const *out) {
    int kind = op_kind(w);
    int64_t n = p[0] * p[1] * p[2] * p[3];
    if (kind <= UN_SIGMOID) {
        for (int64_t i = 0; i < n; i++) {
            double x = in[0][i];
            out[0][i] = kind == UN_RELU ? (x > 0 ? x : 0)
                        : kind == UN_GELU ? ops__gelu_ref(x)
                                          : 1.0 / (1.0 + exp(-x));
        }
        return;
    }
    int64_t idx[4];
    for (idx[0] = 0; idx[0] < p[0]; idx[0]++)
        for (idx[1] = 0; idx[1] < p[1]; idx[1]++)
            for (idx[2] = 0; idx[2] < p[2]; idx[2]++)
                for (idx[3] = 0; idx[3] < p[3]; idx[3]++) {
                    double v[2];
                    for (int o = 0; o < 2; o++) {
                        int64_t mask = p[EW_ABC + o], off = 0;
                        for (int d = 0; d < 4; d++) {
                            bool b = (mask >> d) & 1;
                            off = off * (b ? 1 : p[d]) + (b ? 0 : idx[d]);
                        }
                        v[o] = in[o][off];
                    }
                    int64_t y = ((idx[0] * p[1] + idx[1]) * p[2] + idx[2]) * p[3] + idx[3];
                    out[0][y] = kind == BIN_ADD ? v[0] + v[1] : v[0] * v[1];
                }
}

static int ew_sched(const ops_workload *w, sch_schedule *s, const int64_t *p, int vlen) {
    (void)p;
    return ops__sched_elemwise(s, ((const ops__priv *)w->priv)->t[0], vlen, NULL);
}

/* CUDA: every axis fused, blocks of 256 threads, one element each. */
static int ew_cuda(const ops_workload *w, sch_schedule *s, const int64_t *p,
                   const ops__gpu *gpu) {
    (void)p;
    return ops__cuda_flat(s, ((const ops__priv *)w->priv)->t[0], 256, NULL);
}

#define UNARY(sym, nm, doc)                                                      \
    const ops__impl sym = {                                                      \
        .info = {nm, NULL, doc, 4, {DIMS}},                                      \
        .build = ew_build,                                                       \
        .reference = ew_ref,                                                     \
        .schedule = ew_sched,                                                    \
        .cuda_schedule = ew_cuda,                                                \
    }
#define BCAST(n, d) {n, false, 0, 0, 15, d}
#define BINARY(sym, nm, doc)                                                           \
    const ops__impl sym = {                                                            \
        .info = {nm, NULL, doc, 6,                                                     \
                 {DIMS, BCAST("a_bcast", "bit d set: A has extent 1 in dimension d"), \
                  BCAST("b_bcast", "bit d set: B has extent 1 in dimension d")}},     \
        .build = ew_build,                                                             \
        .reference = ew_ref,                                                           \
        .schedule = ew_sched,                                                          \
        .cuda_schedule = ew_cuda,                                                      \
    }

UNARY(ops__relu, "relu", "Y = max(X, 0) elementwise on [D0,D1,D2,D3]");
UNARY(ops__gelu, "gelu", "Y = 0.5 X (1 + erf(X / sqrt 2)) elementwise on [D0,D1,D2,D3]");
UNARY(ops__sigmoid, "sigmoid", "Y = 1 / (1 + exp(-X)) elementwise on [D0,D1,D2,D3]");
BINARY(ops__add, "add", "Y[D0,D1,D2,D3] = A + B with numpy broadcasting (a_bcast, b_bcast)");
BINARY(ops__mul, "mul", "Y[D0,D1,D2,D3] = A * B with numpy broadcasting (a_bcast, b_bcast)");
