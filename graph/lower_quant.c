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
    te_dtype dt;
    int nd;
    int64_t shape[TE_MAX_DIMS];
    te_expr *ax[TE_MAX_DIMS];
    if (!gr_lin(c, 0, "x", &X) || !gr_lin(c, 1, "scale", &S) || !gr_lout_axes(c, 0, &dt, &nd, shape, ax))
        return false;
    if (c->n_inputs > 2 && c->tin[2] && !gr_lin(c, 2, "zero_point", &Z)) return false;
    te_ctx *ctx = c->ctx;
    /* per tensor: index 0; per axis: the output's index on the axis */
    te_expr *at = te_int(ctx, 0);
    if (gr_lin_rank(c, 1) == 1 && c->tin[1]->shape[0] > 1) {
        const gr_attr *a = gr_node_attr(c->n, "axis");
        int64_t axis = a && a->kind == GR_ATTR_INT ? a->i : 1;
        at = ax[axis < 0 ? axis + nd : axis];
    }
    te_expr *x = te_cast(TE_FLOAT32, gr_read_bcast(X, gr_lin_rank(c, 0), nd, ax));
    te_expr *s = te_read(S, at);
    te_expr *z = Z ? te_cast(TE_FLOAT32, te_read(Z, at)) : te_float(ctx, 0);
    double n = 1;
    for (int d = 0; d < nd; d++) n *= (double)shape[d];
    if (!q) {
        c->flops += 2 * n;
        return gr_lout(c, 0, nd, ax, te_mul(te_sub(x, z), s));
    }
    te_expr *d = te_div(x, s);
    te_expr *r = te_add(te_call(TE_INTRIN_RINT, 1, &d), z);
    double lo = dt.code == TE_UINT ? 0 : -128, hi = dt.code == TE_UINT ? 255 : 127;
    r = te_max(te_min(r, te_float(ctx, hi)), te_float(ctx, lo));
    c->flops += 4 * n;
    return gr_lout(c, 0, nd, ax, te_cast(dt, r));
}

const gr_lower_rule gr_lower_rules_quant[] = {
    {"", "QuantizeLinear", lower_quant, 0, 0},
    {"", "DequantizeLinear", lower_quant, 0, 0},
    {0},
};
