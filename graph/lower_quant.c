/* graph/lower_quant.c — QuantizeLinear and DequantizeLinear (checked by
 * infer_quant.c), in float32 as ONNX's reference computes them:
 *   quantize:   clamp(rint(x / scale) + zero_point, lo, hi), rint ties to
 *               even, [lo, hi] the output type's range ([0, 255] uint8,
 *               [-128, 127] int8);
 *   dequantize: (float(x) - float(zero_point)) scale.
 * A per-axis scale and zero point are read at the output's index on that
 * axis. FLOPs: 4 per element (quantize), 2 (dequantize). */
#include "graph/infer_internal.h"
#include "graph/lower.h"

#include <string.h>

static bool lower_quant(gr_lctx *c)
{
    bool q = strcmp(c->n->op_type, "QuantizeLinear") == 0;
    te_tensor *X, *S, *Z = NULL;
    gr_loutput o;
    if (!gr_lin(c, 0, "x", &X) || !gr_lin(c, 1, "scale", &S) || !gr_lout_get(c, 0, &o))
        return false;
    if (c->n_inputs > 2 && c->tin[2] && !gr_lin(c, 2, "zero_point", &Z)) return false;
    te_ctx *ctx = c->ctx;
    /* per tensor: index 0; per axis: the output's index on the axis */
    te_expr *at = te_int(ctx, 0);
    if (gr_lin_rank(c, 1) == 1 && c->tin[1]->shape[0] > 1) {
        const gr_attr *a = gr_node_attr(c->n, "axis");
        int64_t axis = a && a->kind == GR_ATTR_INT ? a->i : 1;
        at = o.ax[axis < 0 ? axis + o.nd : axis];
    }
    te_expr *x = te_cast(TE_FLOAT32, gr_read_bcast(X, gr_lin_rank(c, 0), o.nd, o.ax));
    te_expr *s = te_read(S, at);
    te_expr *z = Z ? te_cast(TE_FLOAT32, te_read(Z, at)) : te_float(ctx, 0);
    double n = gr_loutput_numel(&o);
    if (!q) {
        c->flops += 2 * n;
        return gr_lout(c, 0, o.nd, o.ax, te_mul(te_sub(x, z), s));
    }
    te_expr *d = te_div(x, s);
    te_expr *r = te_add(te_call(TE_INTRIN_RINT, 1, &d), z);
    double lo = o.dt.code == TE_UINT ? 0 : -128, hi = o.dt.code == TE_UINT ? 255 : 127;
    r = te_max(te_min(r, te_float(ctx, hi)), te_float(ctx, lo));
    c->flops += 4 * n;
    return gr_lout(c, 0, o.nd, o.ax, te_cast(o.dt, r));
}

/* DynamicQuantizeLinear in float32 as ONNX's reference: lo = min(min(x),
 * 0), hi = max(max(x), 0) (two reductions over all of x), scale =
 * (hi - lo) / 255, zero point clamp(rint(-lo / scale), 0, 255), y =
 * clamp(rint(x / scale) + zero point, 0, 255). An x of zeros only has
 * scale 0, which the reference divides by too (y then saturates).
 * FLOPs: 2 per element for the range, 4 per element for y. */
static bool lower_dynamic_quant(gr_lctx *c)
{
    te_tensor *X;
    if (!gr_lin(c, 0, "x", &X)) return false;
    te_ctx *ctx = c->ctx;
    te_expr *r[TE_MAX_DIMS], *m[1];
    te_tensor *range[2];
    for (int k = 0; k < 2; k++) {
        if (!gr_lfresh_axes(c, k ? "rmax" : "rmin", true, X->ndim, X->shape, r) ||
            !gr_lfresh_axes(c, k ? "max" : "min", false, 1, (int64_t[]){1}, m))
            return false;
        range[k] = gr_lstage(c, k ? "max" : "min", 1, m,
                             te_reduce_n(k ? TE_REDUCE_MAX : TE_REDUCE_MIN, te_read_n(X, X->ndim, r), X->ndim, r));
        if (!range[k]) return false;
    }
    te_expr *zero = te_int(ctx, 0);
    te_expr *lo = te_min(te_read(range[0], zero), te_float(ctx, 0));
    te_expr *hi = te_max(te_read(range[1], zero), te_float(ctx, 0));
    te_expr *scale = te_div(te_sub(hi, lo), te_float(ctx, 255));
    te_expr *zq = te_div(te_sub(te_float(ctx, 0), lo), scale);
    te_expr *zp = te_max(te_min(te_call(TE_INTRIN_RINT, 1, &zq), te_float(ctx, 255)), te_float(ctx, 0));
    double n = 1;
    for (int d = 0; d < X->ndim; d++) n *= (double)X->shape[d];
    c->flops += 6 * n;
    for (int k = 0; k < 3; k++) {
        if (k >= c->n_outputs || !c->tout[k]) continue;
        gr_loutput o;
        if (!gr_lout_get(c, k, &o)) return false;
        te_expr *body;
        if (k == 1) {
            body = scale;
        } else if (k == 2) {
            body = te_cast(o.dt, zp);
        } else {
            te_expr *q = te_div(te_read_n(X, o.nd, o.ax), scale);
            te_expr *y = te_add(te_call(TE_INTRIN_RINT, 1, &q), zp);
            body = te_cast(o.dt, te_max(te_min(y, te_float(ctx, 255)), te_float(ctx, 0)));
        }
        if (!gr_lout(c, k, o.nd, o.ax, body)) return false;
    }
    return true;
}

const gr_lower_rule gr_lower_rules_quant[] = {
    {"", "DynamicQuantizeLinear", lower_dynamic_quant, 0, 0},
    {"", "QuantizeLinear", lower_quant, 0, 0},
    {"", "DequantizeLinear", lower_quant, 0, 0},
    {0},
};
