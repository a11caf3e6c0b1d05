/* graph/lower_lrn.c — LRN (checked by infer_lrn.c):
 *   Y[n, c, ...] = X[n, c, ...] / (bias + alpha / size * S)^beta,
 *   S = the sum of X[n, c', ...]^2 over c - floor((size - 1) / 2) <= c'
 *       <= c + ceil((size - 1) / 2) within [0, C)
 * (ONNX's definition; alpha 1e-4, beta 0.75, bias 1 by default). The
 * window's reads past the channels are clamped and their squares
 * selected away. FLOPs: 2 per window element, 4 per output element. */
#include "graph/infer_internal.h"
#include "graph/lower.h"

static double attr_f(const gr_node *n, const char *name, double dflt)
{
    const gr_attr *a = gr_node_attr(n, name);
    return a && a->kind == GR_ATTR_FLOAT ? (double)a->f : dflt;
}

static bool lower_lrn(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    int64_t size = gr_node_attr(c->n, "size")->i;
    te_expr *r[1], *idx[TE_MAX_DIMS], *ox[TE_MAX_DIMS];
    if (!gr_lin(c, 0, "X", &X) || !gr_lout_get(c, 0, &o)) return false;
    if (!te_dtype_is_float(o.dt)) return gr_lfail(c, "input X is %s; Loom computes LRN in float and double", te_dtype_str(o.dt));
    te_ctx *ctx = c->ctx;
    int64_t C = o.shape[1];
    if (!gr_lfresh_axes(c, "r", true, 1, &size, r) || !gr_lfresh_axes(c, "s", false, o.nd, o.shape, ox)) return false;
    te_expr *ch = te_add(te_sub(ox[1], te_int(ctx, (size - 1) / 2)), r[0]);
    te_expr *in = te_and(te_ge(ch, te_int(ctx, 0)), te_lt(ch, te_int(ctx, C)));
    for (int d = 0; d < o.nd; d++) idx[d] = d == 1 ? te_max(te_min(ch, te_int(ctx, C - 1)), te_int(ctx, 0)) : ox[d];
    te_expr *v = te_read_n(X, o.nd, idx);
    te_tensor *S = gr_lstage(c, "sqsum", o.nd, ox,
                             te_reduce_n(TE_REDUCE_SUM, te_select(in, te_mul(v, v), te_const(ctx, o.dt, 0)), 1, r));
    if (!S) return false;
    double alpha = attr_f(c->n, "alpha", 1e-4), beta = attr_f(c->n, "beta", 0.75), bias = attr_f(c->n, "bias", 1);
    te_expr *base = te_add(te_const(ctx, o.dt, bias), te_mul(te_const(ctx, o.dt, alpha / (double)size), te_read_n(S, o.nd, o.ax)));
    double n = gr_loutput_numel(&o);
    c->flops += n * (2.0 * (double)size + 4);
    return gr_lout(c, 0, o.nd, o.ax, te_div(te_read_n(X, o.nd, o.ax), te_pow(base, te_const(ctx, o.dt, beta))));
}

const gr_lower_rule gr_lower_rules_lrn[] = {
    {"", "LRN", lower_lrn, 0, 0},
    {0},
};
