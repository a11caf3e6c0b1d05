/* graph/lower_upsample.c — Upsample, mode nearest (checked by
 * infer_upsample.c): Y[i...] = X[floor(i_d / scale_d)...], computed in
 * float64 and clamped into X. FLOPs: 0. */
#include <math.h>

#include "graph/infer_internal.h"
#include "graph/lower.h"

static bool lower_upsample(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    if (!gr_lin(c, 0, "X", &X) || !gr_lout_get(c, 0, &o)) return false;
    double sc[GR_MAX_DIMS];
    const char *why;
    if (!gr_upsample_scales(c->n, c->opset, c->n_inputs > 1 ? c->cin[1] : NULL, gr_lin_rank(c, 0), sc, &why))
        return gr_lfail(c, "%s", why);
    te_ctx *ctx = c->ctx;
    te_expr *xi[TE_MAX_DIMS];
    for (int d = 0; d < o.nd; d++) {
        if (sc[d] == 1) {
            xi[d] = o.ax[d];
            continue;
        }
        te_expr *q = te_div(te_cast(TE_FLOAT64, o.ax[d]), te_const(ctx, TE_FLOAT64, sc[d]));
        te_expr *i = te_cast(TE_INT64, te_call(TE_INTRIN_FLOOR, 1, (te_expr *[]){q}));
        xi[d] = te_max(te_min(i, te_int(ctx, X->shape[d] - 1)), te_int(ctx, 0));
    }
    return gr_lout(c, 0, o.nd, o.ax, te_read_n(X, o.nd, xi));
}

const gr_lower_rule gr_lower_rules_upsample[] = {
    {"", "Upsample", lower_upsample, 1u << 1, 9},
    {0},
};
