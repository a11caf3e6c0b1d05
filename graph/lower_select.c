/* graph/lower_select.c — GatherND and ReverseSequence (checked by
 * infer_select.c): each output element reads one input element at
 * positions taken from the run-time index tensor. Indices out of range,
 * which ONNX makes an error, are clamped into the dimension (as Gather's
 * and GatherElements'): a read never leaves the data. FLOPs: 0. */
#include "graph/infer_internal.h"
#include "graph/lower.h"

static te_expr *clamp_index(te_ctx *ctx, te_expr *j, int64_t extent, bool wrap_negative)
{
    j = te_cast(TE_INT64, j);
    if (wrap_negative) j = te_select(te_lt(j, te_int(ctx, 0)), te_add(j, te_int(ctx, extent)), j);
    return te_max(te_min(j, te_int(ctx, extent - 1)), te_int(ctx, 0));
}

/* out[i..., j...] = data[i[:b]..., indices[i..., 0 .. k-1]..., j...]
 * (negative indices count from the end). */
static bool lower_gather_nd(gr_lctx *c)
{
    te_tensor *X, *I;
    gr_loutput o;
    if (!gr_lin(c, 0, "data", &X) || !gr_lin(c, 1, "indices", &I) || !gr_lout_get(c, 0, &o))
        return false;
    te_ctx *ctx = c->ctx;
    int r = gr_lin_rank(c, 0), q = gr_lin_rank(c, 1);
    const gr_attr *ba = gr_node_attr(c->n, "batch_dims");
    int b = ba && ba->kind == GR_ATTR_INT ? (int)ba->i : 0;
    int k = (int)I->shape[q - 1];
    te_expr *xi[TE_MAX_DIMS], *ii[TE_MAX_DIMS];
    for (int d = 0; d < q - 1; d++) ii[d] = o.ax[d];
    for (int d = 0; d < b; d++) xi[d] = o.ax[d];
    for (int t = 0; t < k; t++) {
        ii[q - 1] = te_int(ctx, t);
        xi[b + t] = clamp_index(ctx, te_read_n(I, q, ii), X->shape[b + t], true);
    }
    for (int d = b + k; d < r; d++) xi[d] = o.ax[q - 1 + d - b - k];
    return gr_lout(c, 0, o.nd, o.ax, te_read_n(X, r, xi));
}

/* out[t, b] = input[len[b] - 1 - t, b] for t < len[b], else input[t, b]
 * (time and batch axes as the attributes say). */
static bool lower_reverse_sequence(gr_lctx *c)
{
    te_tensor *X, *L;
    gr_loutput o;
    if (!gr_lin(c, 0, "input", &X) || !gr_lin(c, 1, "sequence_lens", &L) ||
        !gr_lout_get(c, 0, &o))
        return false;
    te_ctx *ctx = c->ctx;
    const gr_attr *ta = gr_node_attr(c->n, "time_axis");
    int tax = ta && ta->kind == GR_ATTR_INT ? (int)ta->i : 0, bax = 1 - tax;
    te_expr *len = te_cast(TE_INT64, te_read(L, o.ax[bax])), *t = o.ax[tax];
    te_expr *rev = clamp_index(ctx, te_sub(te_sub(len, te_int(ctx, 1)), t), X->shape[tax], false);
    te_expr *xi[TE_MAX_DIMS];
    for (int d = 0; d < o.nd; d++) xi[d] = o.ax[d];
    xi[tax] = te_select(te_lt(t, len), rev, t);
    return gr_lout(c, 0, o.nd, o.ax, te_read_n(X, o.nd, xi));
}

const gr_lower_rule gr_lower_rules_select[] = {
    {"", "GatherND", lower_gather_nd, 0, 0},
    {"", "ReverseSequence", lower_reverse_sequence, 0, 0},
    {0},
};
