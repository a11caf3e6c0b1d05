/* graph/lower_scatter.c — Scatter, ScatterElements and ScatterND (checked
 * by infer_scatter.c) as gathers seen from the output: output element p
 * looks at every update that could land on it (along the axis for
 * ScatterElements, every index tuple for ScatterND) and a reduction stage
 * combines those whose index names p. With no reduction ONNX leaves
 * duplicate indices undefined; the last update in index order wins, as a
 * sequential loop would do. Negative indices count from the end; an index
 * out of range (an error in ONNX) matches no position. The work is the
 * output's size times the updates per position: quadratic where the
 * scatter is dense, for the small tables models scatter into.
 * FLOPs: one comparison per (output, candidate update) pair. */
#include <string.h>

#include "graph/infer_internal.h"
#include "graph/lower.h"
#include "graph/scatter.h"

static te_expr *wrap_index(te_ctx *ctx, te_expr *j, int64_t extent)
{
    j = te_cast(TE_INT64, j);
    return te_select(te_lt(j, te_int(ctx, 0)), te_add(j, te_int(ctx, extent)), j);
}

/* The output from `hit` (an update at reduce position red[] lands on stage
 * position rax[]) and `upd` (that update's value): a reduction stage over
 * red[] (extents ext[]) and the output combining it with data. */
static bool combine(gr_lctx *c, te_tensor *X, te_expr *const *rax, te_expr *hit, te_expr *upd, int nred,
                    te_expr *const *red, const int64_t *ext)
{
    te_ctx *ctx = c->ctx;
    gr_loutput o;
    gr_scatter_red mode;
    const char *why;
    if (!gr_scatter_reduction(c->n, c->opset, &mode, &why)) return gr_lfail(c, "%s", why);
    if (!gr_lout_get(c, 0, &o)) return false;
    int r = X->ndim;
    te_expr *xval = te_read_n(X, r, o.ax);
    double pairs = (double)ext[0];
    for (int d = 1; d < nred; d++) pairs *= (double)ext[d];
    for (int d = 0; d < r; d++) pairs *= (double)X->shape[d];
    c->flops += pairs;
    if (mode == GR_SCATTER_NONE) {
        /* the last landing update's flat position, -1 for none */
        te_expr *flat = te_int(ctx, 0);
        for (int d = 0; d < nred; d++) flat = te_add(te_mul(flat, te_int(ctx, ext[d])), red[d]);
        te_tensor *W = gr_lstage(c, "last", r, rax,
                                 te_reduce_n(TE_REDUCE_MAX, te_select(hit, flat, te_int(ctx, -1)), nred, red));
        if (!W) return false;
        te_expr *w = te_read_n(W, r, o.ax), *vars[2 * TE_MAX_DIMS], *vals[2 * TE_MAX_DIMS];
        te_expr *wc = te_max(w, te_int(ctx, 0));
        int64_t stride = 1;
        for (int d = nred - 1; d >= 0; d--) {
            vars[d] = red[d];
            vals[d] = te_floormod(te_floordiv(wc, te_int(ctx, stride)), te_int(ctx, ext[d]));
            stride *= ext[d];
        }
        for (int d = 0; d < r; d++) {
            vars[nred + d] = rax[d];
            vals[nred + d] = o.ax[d];
        }
        te_expr *u = te_substitute(ctx, upd, nred + r, vars, vals);
        return gr_lout(c, 0, o.nd, o.ax, te_select(te_ge(w, te_int(ctx, 0)), u, xval));
    }
    static const te_reduce_op ops[] = {TE_REDUCE_SUM, TE_REDUCE_SUM, TE_REDUCE_PROD, TE_REDUCE_MAX, TE_REDUCE_MIN};
    te_reduce_op op = ops[mode];
    te_tensor *A = gr_lstage(c, "acc", r, rax,
                             te_reduce_n(op, te_select(hit, upd, te_reduce_identity(ctx, op, o.dt)), nred, red));
    if (!A) return false;
    return gr_lout(c, 0, o.nd, o.ax, te_reduce_combine(op, xval, te_read_n(A, r, o.ax)));
}

/* out[..., j, ...] combines updates[..., s, ...] over the s with
 * indices[..., s, ...] == j (the other coordinates p's own, where they
 * are within indices' extents). */
static bool lower_scatter_elements(gr_lctx *c)
{
    te_tensor *X, *I, *U;
    if (!gr_lin(c, 0, "data", &X) || !gr_lin(c, 1, "indices", &I) || !gr_lin(c, 2, "updates", &U)) return false;
    te_ctx *ctx = c->ctx;
    int r = X->ndim;
    const gr_attr *aa = gr_node_attr(c->n, "axis");
    int axis = (int)(aa && aa->kind == GR_ATTR_INT ? aa->i : 0);
    if (axis < 0) axis += r;
    te_expr *rax[TE_MAX_DIMS], *ii[TE_MAX_DIMS];
    if (!gr_lfresh_axes(c, "e", false, r, X->shape, rax)) return false;
    int64_t ext = I->shape[axis];
    te_expr *s = te_reduce_axis(ctx, "s", ext);
    if (!s) return gr_lfail(c, "%s", te_ctx_errmsg(ctx));
    te_expr *inside = NULL;
    for (int d = 0; d < r; d++) {
        if (d == axis) {
            ii[d] = s;
            continue;
        }
        ii[d] = rax[d];
        if (I->shape[d] < X->shape[d]) {
            /* positions past indices' extent take no update (read clamped) */
            te_expr *in = te_lt(rax[d], te_int(ctx, I->shape[d]));
            inside = inside ? te_and(inside, in) : in;
            ii[d] = te_min(rax[d], te_int(ctx, I->shape[d] - 1));
        }
    }
    te_expr *hit = te_eq(wrap_index(ctx, te_read_n(I, r, ii), X->shape[axis]), rax[axis]);
    if (inside) hit = te_and(inside, hit);
    return combine(c, X, rax, hit, te_read_n(U, r, ii), 1, &s, &ext);
}

/* out[p] combines updates[t, p[k:]] over the index tuples t with
 * indices[t, 0..k-1] == p[0..k-1]. */
static bool lower_scatter_nd(gr_lctx *c)
{
    te_tensor *X, *I, *U;
    if (!gr_lin(c, 0, "data", &X) || !gr_lin(c, 1, "indices", &I) || !gr_lin(c, 2, "updates", &U)) return false;
    te_ctx *ctx = c->ctx;
    int r = X->ndim, q = gr_lin_rank(c, 1);
    int k = (int)I->shape[q - 1];
    te_expr *rax[TE_MAX_DIMS], *red[TE_MAX_DIMS];
    int64_t ext[TE_MAX_DIMS];
    if (!gr_lfresh_axes(c, "e", false, r, X->shape, rax)) return false;
    /* one update tuple per leading index position; a rank-1 indices is
     * one tuple (a reduction over a single position) */
    int nred = q > 1 ? q - 1 : 1;
    for (int d = 0; d < nred; d++) ext[d] = q > 1 ? I->shape[d] : 1;
    if (!gr_lfresh_axes(c, "t", true, nred, ext, red)) return false;
    te_expr *ii[TE_MAX_DIMS], *hit = NULL;
    for (int d = 0; d < q - 1; d++) ii[d] = red[d];
    for (int t = 0; t < k; t++) {
        ii[q - 1] = te_int(ctx, t);
        te_expr *h = te_eq(wrap_index(ctx, te_read_n(I, q, ii), X->shape[t]), rax[t]);
        hit = hit ? te_and(hit, h) : h;
    }
    te_expr *ui[TE_MAX_DIMS];
    int nu = 0;
    for (int d = 0; d < q - 1; d++) ui[nu++] = red[d];
    for (int d = k; d < r; d++) ui[nu++] = rax[d];
    if (nu == 0) ui[nu++] = te_int(ctx, 0); /* a scalar update: te shape [1] */
    if (q == 1) hit = te_and(hit, te_eq(red[0], te_int(ctx, 0)));
    return combine(c, X, rax, hit, te_read_n(U, nu, ui), nred, red, ext);
}

const gr_lower_rule gr_lower_rules_scatter[] = {
    {"", "Scatter", lower_scatter_elements, 0, 0},
    {"", "ScatterElements", lower_scatter_elements, 0, 0},
    {"", "ScatterND", lower_scatter_nd, 0, 0},
    {0},
};
