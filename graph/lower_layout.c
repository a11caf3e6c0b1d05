/* graph/lower_layout.c — Loom's layout operators (graph/infer_layout.c
 * defines them) as te computations: the blocked convolution reads its
 * input, weights and bias with the block lane innermost, so a register
 * tile vectorized over the output's last axis (output channels of one
 * block) reads the weights as contiguous vectors and the input as one
 * broadcast lane, and writes whole vectors without a transposing copy. */
#include "graph/lower.h"

#include <stdio.h>
#include <string.h>

static int64_t attr_int(const gr_lctx *c, const char *name, int64_t dflt)
{
    const gr_attr *a = gr_node_attr(c->n, name);
    return a && a->kind == GR_ATTR_INT ? a->i : dflt;
}

static void attr_ints(const gr_lctx *c, const char *name, int want, int64_t dflt, int64_t *out)
{
    const gr_attr *a = gr_node_attr(c->n, name);
    for (int i = 0; i < want; i++)
        out[i] = a && a->kind == GR_ATTR_INTS && a->n == (size_t)want ? a->ints[i] : dflt;
}

/* Y[n, cb, h, w, ci] = X[n, cb*b + ci, h, w], zero in the padding lanes
 * (cb*b + ci >= C) */
static bool lower_to_nchwc(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    if (!gr_lin(c, 0, "X", &X) || !gr_lout_get(c, 0, &o)) return false;
    if (o.nd != 5 || X->ndim != 4) return gr_lfail(c, "needs a 4-D input and a 5-D output");
    te_expr *ch = te_add(te_mul(o.ax[1], te_int(c->ctx, o.shape[4])), o.ax[4]);
    int64_t C = X->shape[1];
    if (o.shape[1] * o.shape[4] == C)
        return gr_lout(c, 0, o.nd, o.ax, te_read(X, o.ax[0], ch, o.ax[2], o.ax[3]));
    /* Clamped: both sides of the select are evaluated. */
    te_expr *x = te_read(X, o.ax[0], te_min(ch, te_int(c->ctx, C - 1)), o.ax[2], o.ax[3]);
    return gr_lout(c, 0, o.nd, o.ax,
                   te_select(te_lt(ch, te_int(c->ctx, C)), x, te_const(c->ctx, o.dt, 0)));
}

/* Y[n, c, h, w] = X[n, c / b, h, w, c % b] */
static bool lower_from_nchwc(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    if (!gr_lin(c, 0, "X", &X) || !gr_lout_get(c, 0, &o)) return false;
    if (o.nd != 4 || X->ndim != 5) return gr_lfail(c, "needs a 5-D input and a 4-D output");
    te_expr *b = te_int(c->ctx, X->shape[4]);
    return gr_lout(c, 0, o.nd, o.ax,
                   te_read(X, o.ax[0], te_floordiv(o.ax[1], b), o.ax[2], o.ax[3],
                           te_floormod(o.ax[1], b)));
}

static bool lower_conv_nchwc(gr_lctx *c)
{
    te_tensor *X, *W, *B = NULL;
    gr_loutput o;
    if (!gr_lin(c, 0, "X", &X) || !gr_lin(c, 1, "W", &W)) return false;
    if (c->n_inputs > 2 && c->tin[2] && !gr_lin(c, 2, "B", &B)) return false;
    if (!gr_lout_get(c, 0, &o)) return false;
    te_ctx *ctx = c->ctx;
    int64_t s[2], d[2], p[4], k[2] = {W->shape[2], W->shape[3]};
    attr_ints(c, "strides", 2, 1, s);
    attr_ints(c, "dilations", 2, 1, d);
    attr_ints(c, "pads", 4, 0, p);
    /* A plain (rank 4) X: blocks of one channel, no lane index. */
    int xnd = X->ndim;
    int64_t bi = xnd == 5 ? X->shape[4] : 1;
    int64_t group = attr_int(c, "group", 1), C = X->shape[1] * bi;
    /* Grouped blocked convolutions have whole input blocks per group
     * (graph/infer_layout.c); only depthwise has group == C. */
    bool depthwise = group > 1 && group == C;

    /* The padded input, as far as the windows read it. */
    te_tensor *Xp = X;
    int64_t pshape[5] = {X->shape[0], X->shape[1], 0, 0, bi};
    bool need = false;
    for (int i = 0; i < 2; i++) {
        pshape[2 + i] = (o.shape[2 + i] - 1) * s[i] + (k[i] - 1) * d[i] + 1;
        if (p[i] > 0 || pshape[2 + i] > X->shape[2 + i]) need = true;
    }
    if (need) {
        te_expr *pa[5], *idx[5], *inside = NULL;
        if (!gr_lfresh_axes(c, "p", false, xnd, pshape, pa)) return false;
        idx[0] = pa[0], idx[1] = pa[1];
        if (xnd == 5) idx[4] = pa[4];
        for (int i = 0; i < 2; i++) {
            te_expr *q = te_sub(pa[2 + i], te_int(ctx, p[i]));
            /* Clamped: both sides of the select are evaluated. */
            if (p[i] > 0) {
                te_expr *cond = te_ge(pa[2 + i], te_int(ctx, p[i]));
                inside = inside ? te_and(inside, cond) : cond;
                q = te_max(q, te_int(ctx, 0));
            }
            if (pshape[2 + i] > p[i] + X->shape[2 + i]) {
                te_expr *cond = te_lt(pa[2 + i], te_int(ctx, p[i] + X->shape[2 + i]));
                inside = inside ? te_and(inside, cond) : cond;
                q = te_min(q, te_int(ctx, X->shape[2 + i] - 1));
            }
            idx[2 + i] = q;
        }
        te_expr *x = te_read_n(X, xnd, idx);
        Xp = gr_lstage(c, "pad", xnd, pa,
                       inside ? te_select(inside, x, te_const(ctx, o.dt, 0)) : x);
        if (!Xp) return false;
    }

    te_expr *cax[5];
    if (B) {
        if (!gr_lfresh_axes(c, "c", false, 5, o.shape, cax)) return false;
    } else {
        memcpy(cax, o.ax, sizeof cax);
    }
    te_expr *oh = s[0] == 1 ? cax[2] : te_mul(cax[2], te_int(ctx, s[0]));
    te_expr *ow = s[1] == 1 ? cax[3] : te_mul(cax[3], te_int(ctx, s[1]));
    te_expr *r[4], *sum;
    double taps;
    if (depthwise) {
        int64_t rs[2] = {k[0], k[1]};
        if (!gr_lfresh_axes(c, "r", true, 2, rs, r)) return false;
        te_expr *ih = te_add(oh, d[0] == 1 ? r[0] : te_mul(r[0], te_int(ctx, d[0])));
        te_expr *iw = te_add(ow, d[1] == 1 ? r[1] : te_mul(r[1], te_int(ctx, d[1])));
        te_expr *zero = te_int(ctx, 0);
        sum = te_reduce_n(TE_REDUCE_SUM,
                          te_mul(te_read(Xp, cax[0], cax[1], ih, iw, cax[4]),
                                 te_read(W, cax[1], zero, r[0], r[1], zero, cax[4])),
                          2, r);
        taps = (double)(k[0] * k[1]);
    } else {
        /* Input blocks (of the output block's group) outside the window's
         * taps, lanes innermost. */
        int64_t rs[4] = {W->shape[1], k[0], k[1], bi};
        int nr = xnd == 5 ? 4 : 3;
        if (!gr_lfresh_axes(c, "r", true, nr, rs, r)) return false;
        te_expr *ih = te_add(oh, d[0] == 1 ? r[1] : te_mul(r[1], te_int(ctx, d[0])));
        te_expr *iw = te_add(ow, d[1] == 1 ? r[2] : te_mul(r[2], te_int(ctx, d[1])));
        te_expr *ib = r[0];
        if (group > 1) {
            int64_t per_group = o.shape[1] * o.shape[4] / group / o.shape[4]; /* output blocks */
            te_expr *grp = te_floordiv(cax[1], te_int(ctx, per_group));
            ib = te_add(te_mul(grp, te_int(ctx, W->shape[1])), r[0]);
        }
        te_expr *xv = xnd == 5 ? te_read(Xp, cax[0], ib, ih, iw, r[3])
                               : te_read(Xp, cax[0], ib, ih, iw);
        te_expr *lane = xnd == 5 ? r[3] : te_int(ctx, 0);
        sum = te_reduce_n(TE_REDUCE_SUM,
                          te_mul(xv, te_read(W, cax[1], r[0], r[1], r[2], lane, cax[4])), nr, r);
        taps = (double)(rs[0] * rs[1] * rs[2] * rs[3]);
    }
    double out = (double)(o.shape[0] * o.shape[1] * o.shape[2] * o.shape[3] * o.shape[4]);
    c->flops += 2.0 * out * taps;
    if (!B) return gr_lout(c, 0, o.nd, o.ax, sum);
    te_tensor *conv = gr_lstage(c, "conv", 5, cax, sum);
    if (!conv) return false;
    c->flops += out;
    return gr_lout(c, 0, o.nd, o.ax,
                   te_add(te_read_n(conv, 5, o.ax), te_read(B, o.ax[1], o.ax[4])));
}

const gr_lower_rule gr_lower_rules_layout[] = {
    {"loom", "ConvNCHWc", lower_conv_nchwc, 0, 0},
    {"loom", "ToNCHWc", lower_to_nchwc, 0, 0},
    {"loom", "FromNCHWc", lower_from_nchwc, 0, 0},
    {NULL, NULL, NULL, 0, 0},
};
