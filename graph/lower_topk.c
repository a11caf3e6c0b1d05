/* graph/lower_topk.c — TopK (checked by infer_topk.c) as three te stages,
 * with no sort: each element's rank along the axis is the count of
 * elements that beat it (larger, or equal at a lower position: ONNX keeps
 * the lower index first among ties; the reverse order with largest 0);
 * the ranks are a permutation, so output position j takes the element
 * of rank j. Output order is sorted whether or not `sorted` asks for it
 * (ONNX leaves the order open then). The rank costs n comparisons per
 * element (n the axis' extent): quadratic, for the small k-selection
 * ranges models use. NaN compares false both ways, so a NaN never beats
 * and is never beaten; positions whose rank no element has read index 0.
 * FLOPs: n per element for the ranks, n per output for the selection. */
#include <string.h>

#include "graph/infer_internal.h"
#include "graph/lower.h"

static bool lower_topk(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput values, indices;
    if (!gr_lin(c, 0, "X", &X)) return false;
    int rank = gr_lin_rank(c, 0);
    const gr_attr *aa = gr_node_attr(c->n, "axis");
    int axis = (int)(aa && aa->kind == GR_ATTR_INT ? aa->i : -1);
    if (axis < 0) axis += rank;
    const gr_attr *la = gr_node_attr(c->n, "largest");
    bool largest = !la || la->kind != GR_ATTR_INT || la->i != 0;
    te_ctx *ctx = c->ctx;
    int64_t n = X->shape[axis];
    /* rank[..., i, ...] = #{r : x[r] beats x[i]} */
    te_expr *rax[TE_MAX_DIMS], *xr[TE_MAX_DIMS], *r = te_reduce_axis(ctx, "r", n);
    if (!r) return gr_lfail(c, "%s", te_ctx_errmsg(ctx));
    if (!gr_lfresh_axes(c, "e", false, rank, X->shape, rax)) return false;
    for (int d = 0; d < rank; d++) xr[d] = d == axis ? r : rax[d];
    te_expr *xi = te_read_n(X, rank, rax), *xo = te_read_n(X, rank, xr);
    te_expr *beats = te_or(largest ? te_gt(xo, xi) : te_lt(xo, xi), te_and(te_eq(xo, xi), te_lt(r, rax[axis])));
    te_tensor *R = gr_lstage(c, "rank", rank, rax,
                             te_sum(te_select(beats, te_int(ctx, 1), te_int(ctx, 0)), r));
    if (!R) return false;
    /* indices[..., j, ...] = the r whose rank is j */
    if (!gr_lout_get(c, 1, &indices)) return false;
    te_expr *s = te_reduce_axis(ctx, "s", n), *rs[TE_MAX_DIMS];
    if (!s) return gr_lfail(c, "%s", te_ctx_errmsg(ctx));
    for (int d = 0; d < rank; d++) rs[d] = d == axis ? s : indices.ax[d];
    te_expr *hit = te_eq(te_read_n(R, rank, rs), indices.ax[axis]);
    te_expr *pos = te_sum(te_select(hit, s, te_int(ctx, 0)), s);
    if (!gr_lout(c, 1, indices.nd, indices.ax, pos)) return false;
    te_tensor *I = c->out[1];
    /* values[..., j, ...] = x[..., indices[j], ...] */
    if (!gr_lout_get(c, 0, &values)) return false;
    te_expr *vi[TE_MAX_DIMS];
    for (int d = 0; d < rank; d++) vi[d] = values.ax[d];
    vi[axis] = te_max(te_min(te_read_n(I, rank, values.ax), te_int(ctx, n - 1)), te_int(ctx, 0));
    int64_t elems = 1;
    for (int d = 0; d < rank; d++) elems *= X->shape[d];
    c->flops += (double)elems * (double)n + (double)elems / (double)n * (double)values.shape[axis] * (double)n;
    return gr_lout(c, 0, values.nd, values.ax, te_read_n(X, rank, vi));
}

const gr_lower_rule gr_lower_rules_topk[] = {
    {"", "TopK", lower_topk, 1u << 1, 10},
    {0},
};
