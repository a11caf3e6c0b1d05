/* graph/lower_einsum.c — Einsum (checked by infer_einsum.c) as one te
 * compute: out[output labels] = sum over the other labels of the product
 * of the inputs, each read at its labels (a label repeated in an input
 * reads its diagonal; an ellipsis dimension of extent 1 broadcasts by
 * reading index 0). Without labels to sum, a plain product. A scalar
 * output is te's shape [1]. FLOPs: one multiply-add per input and point
 * of the labels' full space. */
#include <stdio.h>

#include "graph/einsum.h"
#include "graph/lower.h"

static bool lower_einsum(gr_lctx *c)
{
    te_ctx *ctx = c->ctx;
    int n = c->n_inputs;
    te_tensor *X[GR_EINSUM_MAX_IN];
    int ranks[GR_EINSUM_MAX_IN];
    const int64_t *shapes[GR_EINSUM_MAX_IN];
    for (int i = 0; i < n && i < GR_EINSUM_MAX_IN; i++) {
        if (!gr_lin(c, i, "Inputs", &X[i])) return false;
        ranks[i] = gr_lin_rank(c, i);
        shapes[i] = c->tin[i]->shape;
    }
    const gr_attr *a = gr_node_attr(c->n, "equation");
    gr_einsum e;
    char why[200];
    if (!a || a->kind != GR_ATTR_STRING || !gr_einsum_parse(a->s.data, n, ranks, shapes, &e, why, sizeof why))
        return gr_lfail(c, "the equation does not parse");
    gr_loutput o;
    te_expr *var[GR_EINSUM_LABELS] = {0}, *red[GR_EINSUM_LABELS];
    if (!gr_lout_get(c, 0, &o)) return false;
    for (int d = 0; d < e.n_out; d++) var[e.out[d]] = o.ax[d];
    int nred = 0;
    double space = 1;
    for (int l = 0; l < GR_EINSUM_LABELS; l++) {
        if (!e.used[l]) continue;
        space *= (double)e.ext[l];
        if (var[l]) continue;
        char name[16];
        snprintf(name, sizeof name, "r%d", l);
        var[l] = red[nred++] = te_reduce_axis(ctx, name, e.ext[l]);
        if (!var[l]) return gr_lfail(c, "%s", te_ctx_errmsg(ctx));
    }
    te_expr *prod = NULL;
    for (int i = 0; i < n; i++) {
        te_expr *idx[TE_MAX_DIMS];
        int r = ranks[i];
        for (int d = 0; d < r; d++) {
            int l = e.lab[i][d];
            idx[d] = shapes[i][d] == 1 && e.ext[l] != 1 ? te_int(ctx, 0) : var[l];
        }
        if (r == 0) idx[r++] = te_int(ctx, 0); /* a scalar: te shape [1] */
        te_expr *v = te_read_n(X[i], r, idx);
        prod = prod ? te_mul(prod, v) : v;
    }
    c->flops += space * n;
    return gr_lout(c, 0, o.nd, o.ax, nred ? te_reduce_n(TE_REDUCE_SUM, prod, nred, red) : prod);
}

const gr_lower_rule gr_lower_rules_einsum[] = {
    {"", "Einsum", lower_einsum, 0, 0},
    {0},
};
