/* graph/lower_roialign.c — RoiAlign, mode avg (checked by
 * infer_roialign.c), as one te reduction per output over the
 * sampling_ratio^2 samples of its bin, each a bilinear read of X at
 * run-time coordinates from rois and batch_indices, as ONNX Runtime
 * defines it: half_pixel shifts the roi by half a pixel
 * (output_half_pixel, opset 10's rule, does not and stretches rois
 * narrower than a pixel to one); a sample beyond a pixel outside X reads
 * 0; one inside is clamped to the edge. In float64, rounded once.
 * FLOPs: about 20 per sample. */
#include <string.h>

#include "graph/infer_internal.h"
#include "graph/lower.h"

static te_expr *F(te_ctx *ctx, double v) { return te_const(ctx, TE_FLOAT64, v); }

static bool lower_roialign(gr_lctx *c)
{
    te_tensor *X, *Rs, *Bi;
    int nd;
    int64_t shape[TE_MAX_DIMS];
    te_expr *ax[TE_MAX_DIMS];
    /* the sums are a stage on axes of their own; the output averages them */
    if (!gr_lin(c, 0, "X", &X) || !gr_lin(c, 1, "rois", &Rs) || !gr_lin(c, 2, "batch_indices", &Bi) ||
        !gr_te_shape(c->tout[0], &nd, shape) || !gr_lfresh_axes(c, "s", false, nd, shape, ax))
        return false;
    te_ctx *ctx = c->ctx;
    const gr_attr *a;
    int64_t sr = (a = gr_node_attr(c->n, "sampling_ratio")) && a->kind == GR_ATTR_INT ? a->i : 0;
    double scale = (a = gr_node_attr(c->n, "spatial_scale")) && a->kind == GR_ATTR_FLOAT ? a->f : 1.0;
    a = gr_node_attr(c->n, "coordinate_transformation_mode");
    bool half = !(a && a->kind == GR_ATTR_STRING && strcmp(a->s.data, "output_half_pixel") == 0);
    if (c->opset < 16 && !a) half = false; /* opset 10 knew only output_half_pixel */
    int64_t H = X->shape[2], W = X->shape[3], oh = shape[2], ow = shape[3];
    te_expr *r = ax[0];
    te_expr *co[4];
    for (int i = 0; i < 4; i++) {
        co[i] = te_mul(te_cast(TE_FLOAT64, te_read(Rs, r, te_int(ctx, i))), F(ctx, scale));
        if (half) co[i] = te_sub(co[i], F(ctx, 0.5));
    }
    te_expr *rw = te_sub(co[2], co[0]), *rh = te_sub(co[3], co[1]);
    if (!half) {
        rw = te_max(rw, F(ctx, 1));
        rh = te_max(rh, F(ctx, 1));
    }
    te_expr *bh = te_div(rh, F(ctx, (double)oh)), *bw = te_div(rw, F(ctx, (double)ow));
    te_expr *iy = te_reduce_axis(ctx, "iy", sr), *ix = te_reduce_axis(ctx, "ix", sr);
    if (!iy || !ix) return gr_lfail(c, "%s", te_ctx_errmsg(ctx));
    /* sample position */
    te_expr *y = te_add(te_add(co[1], te_mul(te_cast(TE_FLOAT64, ax[2]), bh)),
                        te_div(te_mul(te_add(te_cast(TE_FLOAT64, iy), F(ctx, 0.5)), bh), F(ctx, (double)sr)));
    te_expr *x = te_add(te_add(co[0], te_mul(te_cast(TE_FLOAT64, ax[3]), bw)),
                        te_div(te_mul(te_add(te_cast(TE_FLOAT64, ix), F(ctx, 0.5)), bw), F(ctx, (double)sr)));
    te_expr *outside = te_or(te_or(te_lt(y, F(ctx, -1)), te_gt(y, F(ctx, (double)H))),
                             te_or(te_lt(x, F(ctx, -1)), te_gt(x, F(ctx, (double)W))));
    y = te_max(y, F(ctx, 0));
    x = te_max(x, F(ctx, 0));
    te_expr *yf = te_call(TE_INTRIN_FLOOR, 1, (te_expr *[]){y}), *xf = te_call(TE_INTRIN_FLOOR, 1, (te_expr *[]){x});
    /* at or past the last row (column): both taps on it, no fraction */
    te_expr *ylast = te_ge(yf, F(ctx, (double)(H - 1))), *xlast = te_ge(xf, F(ctx, (double)(W - 1)));
    te_expr *ly = te_select(ylast, F(ctx, 0), te_sub(y, yf)), *lx = te_select(xlast, F(ctx, 0), te_sub(x, xf));
    te_expr *yl = te_min(te_cast(TE_INT64, yf), te_int(ctx, H - 1)), *xl = te_min(te_cast(TE_INT64, xf), te_int(ctx, W - 1));
    te_expr *yh = te_min(te_add(yl, te_int(ctx, 1)), te_int(ctx, H - 1)), *xh = te_min(te_add(xl, te_int(ctx, 1)), te_int(ctx, W - 1));
    te_expr *b = te_max(te_min(te_cast(TE_INT64, te_read(Bi, r)), te_int(ctx, X->shape[0] - 1)), te_int(ctx, 0));
#define V(yy, xx) te_cast(TE_FLOAT64, te_read(X, b, ax[1], yy, xx))
    te_expr *one = F(ctx, 1), *hy = te_sub(one, ly), *hx = te_sub(one, lx);
    te_expr *v = te_add(te_add(te_mul(te_mul(hy, hx), V(yl, xl)), te_mul(te_mul(hy, lx), V(yl, xh))),
                        te_add(te_mul(te_mul(ly, hx), V(yh, xl)), te_mul(te_mul(ly, lx), V(yh, xh))));
#undef V
    v = te_select(outside, F(ctx, 0), v);
    te_expr *sum = te_sum(v, iy, ix);
    c->flops += 20.0 * (double)(shape[0] * shape[1] * oh * ow * sr * sr);
    te_tensor *S = gr_lstage(c, "sum", 4, ax, sum);
    if (!S) return false;
    gr_loutput o;
    if (!gr_lout_get(c, 0, &o)) return false;
    return gr_lout(c, 0, o.nd, o.ax, te_cast(o.dt, te_div(te_read_n(S, 4, o.ax), F(ctx, (double)(sr * sr)))));
}

const gr_lower_rule gr_lower_rules_roialign[] = {
    {"", "RoiAlign", lower_roialign, 0, 0},
    {0},
};
