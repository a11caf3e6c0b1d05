/* graph/lower_resize.c — Resize (geometry checked by infer_resize.c) as
 * ONNX's reference computes it, separably per dimension, in double:
 *
 *   x = the output coordinate mapped to the input (coordinate mode);
 *   nearest: the input index x rounded by nearest_mode, clamped to the
 *            input (the reference pads the edges);
 *   linear / cubic: 2 / 4 taps around x, i0 = ceil(x) - 1 and
 *            r = x - i0 in (0, 1] (an integral x weighs its own element
 *            last with r = 1, as the reference picks its neighbours);
 *            linear weighs i0, i0 + 1 by 1 - r, r; cubic weighs i0 - 1
 *            .. i0 + 2 by Keys' kernel with coefficient A; taps past the
 *            edge read the edge element, or with exclude_outside weigh 0
 *            and the others are renormalized.
 *
 * The taps of every resized dimension are reduce axes (a weighted sum in
 * double, then cast); tf_crop_and_resize puts extrapolation_value where
 * x leaves [0, input - 1] in any dimension. A dimension of unchanged
 * extent and scale 1 reads through unchanged (every mode maps x to x
 * there, except tf_crop_and_resize and tf_half_pixel_for_nn). FLOPs: 2 per tap term, 0 for
 * nearest. */
#include "graph/infer_internal.h"
#include "graph/lower.h"

#include <string.h>

typedef struct {
    te_ctx *ctx;
    const gr_resize_geom *g;
} rctx;

static te_expr *f64(te_ctx *ctx, double v) { return te_float_t(ctx, TE_FLOAT64, v); }

static te_expr *call1(te_intrin op, te_expr *a) { return te_call(op, 1, &a); }

/* The input coordinate of output index i in dimension d (extent in). */
static te_expr *coordinate(const rctx *r, int d, int64_t in, te_expr *i)
{
    te_ctx *ctx = r->ctx;
    const gr_resize_geom *g = r->g;
    double s = g->scale[d], outw = s * (double)in;
    te_expr *x = te_cast(TE_FLOAT64, i);
    switch (g->coord) {
    case GR_RESIZE_HALF_PIXEL:
        return te_sub(te_div(te_add(x, f64(ctx, 0.5)), f64(ctx, s)), f64(ctx, 0.5));
    case GR_RESIZE_PYTORCH_HALF_PIXEL:
        if (g->out[d] == 1) return f64(ctx, -0.5);
        return te_sub(te_div(te_add(x, f64(ctx, 0.5)), f64(ctx, s)), f64(ctx, 0.5));
    case GR_RESIZE_ALIGN_CORNERS:
        /* the reference's output length is input * scale, unrounded */
        if (outw == 1) return f64(ctx, 0);
        return te_div(te_mul(x, f64(ctx, (double)(in - 1))), f64(ctx, outw - 1));
    case GR_RESIZE_ASYMMETRIC:
        return te_div(x, f64(ctx, s));
    case GR_RESIZE_TF_HALF_PIXEL_FOR_NN:
        return te_div(te_add(x, f64(ctx, 0.5)), f64(ctx, s));
    case GR_RESIZE_TF_CROP_AND_RESIZE: {
        double a = g->roi_start[d], b = g->roi_end[d], span = (double)(in - 1);
        if (g->out[d] == 1) return f64(ctx, 0.5 * (a + b) * span);
        return te_add(f64(ctx, a * span),
                      te_div(te_mul(x, f64(ctx, (b - a) * span)), f64(ctx, (double)(g->out[d] - 1))));
    }
    }
    return NULL;
}

static te_expr *nearest_index(const rctx *r, te_expr *x)
{
    te_ctx *ctx = r->ctx;
    switch (r->g->nearest) {
    case GR_RESIZE_ROUND_PREFER_FLOOR: /* ties down */
        return call1(TE_INTRIN_CEIL, te_sub(x, f64(ctx, 0.5)));
    case GR_RESIZE_ROUND_PREFER_CEIL:
        return call1(TE_INTRIN_FLOOR, te_add(x, f64(ctx, 0.5)));
    case GR_RESIZE_FLOOR:
        return call1(TE_INTRIN_FLOOR, x);
    case GR_RESIZE_CEIL:
        return call1(TE_INTRIN_CEIL, x);
    }
    return NULL;
}

/* Keys' cubic kernel weight of tap j (0..3) at r in (0, 1]. */
static te_expr *cubic_weight(te_ctx *ctx, double A, int j, te_expr *r)
{
    te_expr *one = f64(ctx, 1);
    /* t: the tap's distance from x */
    te_expr *t = j == 0 ? te_add(r, one) : j == 1 ? r : j == 2 ? te_sub(one, r) : te_sub(f64(ctx, 2), r);
    if (j == 1 || j == 2) /* |t| <= 1: ((A + 2) t - (A + 3)) t^2 + 1 */
        return te_add(te_mul(te_mul(te_sub(te_mul(f64(ctx, A + 2), t), f64(ctx, A + 3)), t), t), one);
    /* 1 < |t| < 2: ((A t - 5A) t + 8A) t - 4A */
    te_expr *p = te_sub(te_mul(f64(ctx, A), t), f64(ctx, 5 * A));
    p = te_add(te_mul(p, t), f64(ctx, 8 * A));
    return te_sub(te_mul(p, t), f64(ctx, 4 * A));
}

static bool lower_resize(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput out;
    if (!gr_lin(c, 0, "X", &X) || !gr_lout_get(c, 0, &out)) return false;
    te_ctx *ctx = c->ctx;
    int rank = gr_lin_rank(c, 0);
    gr_resize_geom g;
    char why[256];
    const gr_tensor *t[4] = {NULL, NULL, NULL, NULL};
    for (int k = 1; k < 4 && k < c->n_inputs; k++) t[k] = c->tin[k] ? c->cin[k] : NULL;
    if (!gr_resize_geometry(c->n, c->opset, rank, X->shape, t[1], t[2], t[3], &g, why, sizeof why))
        return gr_lfail(c, "%s", why);
    rctx r = {ctx, &g};
    bool taps = g.mode != GR_RESIZE_NEAREST, crop = g.coord == GR_RESIZE_TF_CROP_AND_RESIZE;
    /* tf_half_pixel_for_nn maps x to x + 0.5 even at scale 1 */
    bool moves = crop || g.coord == GR_RESIZE_TF_HALF_PIXEL_FOR_NN;
    int ntap = g.mode == GR_RESIZE_CUBIC ? 4 : 2;
    /* Which dimensions resize, and one reduce axis (the taps) per one
     * of them in linear and cubic modes. */
    int rdim[TE_MAX_DIMS], nr = 0;
    for (int d = 0; d < out.nd; d++)
        if (moves || g.out[d] != X->shape[d] || g.scale[d] != 1.0) rdim[nr++] = d;
    te_expr *k[TE_MAX_DIMS];
    if (taps && nr) {
        int64_t ext[TE_MAX_DIMS];
        for (int i = 0; i < nr; i++) ext[i] = ntap;
        if (!gr_lfresh_axes(c, "t", true, nr, ext, k)) return false;
    }
    te_expr *idx[TE_MAX_DIMS], *outside = NULL, *w = NULL;
    for (int d = 0; d < out.nd; d++) idx[d] = out.ax[d];
    for (int i = 0; i < nr; i++) {
        int d = rdim[i];
        int64_t in = X->shape[d];
        te_expr *x = coordinate(&r, d, in, out.ax[d]), *zero = te_int(ctx, 0), *last = te_int(ctx, in - 1);
        if (crop) {
            te_expr *o = te_or(te_lt(x, f64(ctx, 0)), te_gt(x, f64(ctx, (double)(in - 1))));
            outside = outside ? te_or(outside, o) : o;
        }
        if (!taps) {
            te_expr *j = te_cast(TE_INT64, nearest_index(&r, x));
            idx[d] = te_max(te_min(j, last), zero);
            continue;
        }
        te_expr *i0 = te_sub(te_cast(TE_INT64, call1(TE_INTRIN_CEIL, x)), te_int(ctx, 1));
        te_expr *rr = te_sub(x, te_cast(TE_FLOAT64, i0));
        int off = ntap == 4 ? 1 : 0;
        te_expr *wj[4], *sum = NULL;
        for (int j = 0; j < ntap; j++) {
            wj[j] = ntap == 2 ? (j == 0 ? te_sub(f64(ctx, 1), rr) : rr) : cubic_weight(ctx, g.cubic_a, j, rr);
            if (g.exclude_outside) {
                te_expr *tj = te_add(i0, te_int(ctx, j - off));
                te_expr *in_j = te_and(te_ge(tj, zero), te_le(tj, last));
                wj[j] = te_select(in_j, wj[j], f64(ctx, 0));
                sum = sum ? te_add(sum, wj[j]) : wj[j];
            }
        }
        /* the weight of tap k[i]: a chain of selects over the constants */
        te_expr *wk = wj[ntap - 1];
        for (int j = ntap - 2; j >= 0; j--) wk = te_select(te_eq(k[i], te_int(ctx, j)), wj[j], wk);
        if (sum) wk = te_div(wk, sum);
        w = w ? te_mul(w, wk) : wk;
        te_expr *tap = te_add(te_sub(i0, te_int(ctx, off)), k[i]);
        idx[d] = te_max(te_min(tap, last), zero);
    }
    te_expr *xv = te_read_n(X, X->ndim, idx);
    double n = gr_loutput_numel(&out);
    te_expr *y;
    te_expr *bx[TE_MAX_DIMS];
    if (taps && nr) {
        te_expr *body = te_reduce_n(TE_REDUCE_SUM, te_mul(w, te_cast(TE_FLOAT64, xv)), nr, k);
        te_tensor *S = gr_lstage(c, "sum", out.nd, out.ax, body);
        if (!S || !gr_lfresh_axes(c, "b", false, out.nd, out.shape, bx)) return false;
        y = te_cast(out.dt, te_read_n(S, out.nd, bx));
        if (outside) {
            /* the same test at the fresh axes */
            te_expr *o = NULL;
            for (int i = 0; i < nr; i++) {
                int d = rdim[i];
                te_expr *x = coordinate(&r, d, X->shape[d], bx[d]);
                te_expr *oi = te_or(te_lt(x, f64(ctx, 0)), te_gt(x, f64(ctx, (double)(X->shape[d] - 1))));
                o = o ? te_or(o, oi) : oi;
            }
            y = te_select(o, te_const(ctx, out.dt, g.extrapolation), y);
        }
        double terms = 1;
        for (int i = 0; i < nr; i++) terms *= ntap;
        c->flops += 2 * n * terms;
        return gr_lout(c, 0, out.nd, bx, y);
    }
    y = outside ? te_select(outside, te_const(ctx, out.dt, g.extrapolation), xv) : xv;
    return gr_lout(c, 0, out.nd, out.ax, y);
}

const gr_lower_rule gr_lower_rules_resize[] = {
    /* roi, scales, sizes: read at compile time */
    {"", "Resize", lower_resize, 0xEu, 0},
    {0},
};
