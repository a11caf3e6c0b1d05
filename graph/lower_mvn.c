/* graph/lower_mvn.c — MeanVarianceNormalization (checked by
 * infer_mvn.c) as ONNX's function body computes it, in X's type:
 * mean = E[X], var = E[X^2] - mean^2 over the axes,
 * Y = (X - mean) / (sqrt(var) + 1e-9). The two means are stages of X's
 * rank with extent 1 on the reduced axes. FLOPs: 2 per element for each
 * mean, 4 per element for Y. */
#include "graph/infer_internal.h"
#include "graph/lower.h"

static bool lower_mvn(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    if (!gr_lin(c, 0, "X", &X) || !gr_lout_get(c, 0, &o)) return false;
    te_ctx *ctx = c->ctx;
    int rank = gr_lin_rank(c, 0);
    bool reduced[GR_MAX_DIMS];
    char why[160];
    if (!gr_mvn_axes(c->n, rank, reduced, why, sizeof why)) return gr_lfail(c, "%s", why);
    int64_t kshape[TE_MAX_DIMS], rshape[TE_MAX_DIMS];
    double count = 1, n = 1;
    int nr = 0;
    for (int d = 0; d < o.nd; d++) {
        bool red = d < rank && reduced[d];
        kshape[d] = red ? 1 : o.shape[d];
        if (red) {
            rshape[nr++] = o.shape[d];
            count *= (double)o.shape[d];
        }
        n *= (double)o.shape[d];
    }
    te_tensor *mean[2];
    for (int k = 0; k < 2; k++) {
        te_expr *ka[TE_MAX_DIMS], *r[TE_MAX_DIMS], *xi[TE_MAX_DIMS];
        if (!gr_lfresh_axes(c, k ? "q" : "m", false, o.nd, kshape, ka)) return false;
        if (nr && !gr_lfresh_axes(c, k ? "rq" : "rm", true, nr, rshape, r)) return false;
        for (int d = 0, j = 0; d < o.nd; d++) xi[d] = d < rank && reduced[d] ? r[j++] : ka[d];
        te_expr *x = te_read_n(X, o.nd, xi);
        te_expr *term = k ? te_mul(x, x) : x;
        te_expr *sum = nr ? te_reduce_n(TE_REDUCE_SUM, term, nr, r) : term;
        te_tensor *s = gr_lstage(c, k ? "sumsq" : "sum", o.nd, ka, sum);
        if (!s) return false;
        te_expr *sa[TE_MAX_DIMS];
        if (!gr_lfresh_axes(c, k ? "qa" : "ma", false, o.nd, kshape, sa)) return false;
        mean[k] = gr_lstage(c, k ? "meansq" : "mean", o.nd, sa,
                            te_div(te_read_n(s, o.nd, sa), te_const(ctx, o.dt, count)));
        if (!mean[k]) return false;
    }
    te_expr *ki[TE_MAX_DIMS];
    for (int d = 0; d < o.nd; d++) ki[d] = d < rank && reduced[d] ? te_int(ctx, 0) : o.ax[d];
    te_expr *m = te_read_n(mean[0], o.nd, ki), *q = te_read_n(mean[1], o.nd, ki);
    te_expr *sd = te_add(te_sqrt(te_sub(q, te_mul(m, m))), te_const(ctx, o.dt, 1e-9));
    c->flops += 8 * n;
    return gr_lout(c, 0, o.nd, o.ax, te_div(te_sub(te_read_n(X, o.nd, o.ax), m), sd));
}

const gr_lower_rule gr_lower_rules_mvn[] = {
    {"", "MeanVarianceNormalization", lower_mvn, 0, 0},
    {0},
};
