/* graph/lower_movement.c — operators that move or select elements by
 * position (Expand, Tile, Pad, DepthToSpace, SpaceToDepth, Trilu), build
 * them (Range) or add them along an axis (CumSum). Their shapes and
 * static inputs were checked by inference (infer_movement.c); the rules
 * map each output index to what it reads.
 *
 * FLOPs: 0 for the ones that only move elements; Range one per element;
 * CumSum one addition per term it adds (n (n + 1) / 2 along the axis,
 * computed as a masked sum of the whole axis per output). */
#include "graph/infer_internal.h"
#include "graph/lower.h"

#include <string.h>

static int64_t attr_int(const gr_node *n, const char *name, int64_t dflt)
{
    const gr_attr *a = gr_node_attr(n, name);
    return a && a->kind == GR_ATTR_INT ? a->i : dflt;
}

/* Expand: numpy broadcasting of the input to the output. */
static bool lower_expand(gr_lctx *c)
{
    gr_loutput o;
    te_expr *x = gr_lunary_read(c, "input", NULL, &o);
    return x && gr_lout(c, 0, o.nd, o.ax, x);
}

/* Tile: out[i] = X[i mod extent] in each dimension. */
static bool lower_tile(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    if (!gr_lin(c, 0, "input", &X) || !gr_lout_get(c, 0, &o)) return false;
    te_expr *idx[TE_MAX_DIMS];
    for (int d = 0; d < X->ndim; d++)
        idx[d] = X->shape[d] == o.shape[d] ? o.ax[d] : te_floormod(o.ax[d], te_int(c->ctx, X->shape[d]));
    return gr_lout(c, 0, o.nd, o.ax, te_read_n(X, X->ndim, idx));
}

/* Pad: the input index is the output's minus the leading pad; outside the
 * input, constant mode reads the value (a run-time scalar input from
 * opset 11, else the attribute), reflect mirrors about the edge element,
 * edge repeats it. */
static bool lower_pad(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    if (!gr_lin(c, 0, "data", &X) || !gr_lout_get(c, 0, &o)) return false;
    te_ctx *ctx = c->ctx;
    int rank = gr_lin_rank(c, 0);
    int64_t b[TE_MAX_DIMS], e[TE_MAX_DIMS];
    const char *why;
    if (!gr_pad_amounts(c->n, c->opset, c->n_inputs > 1 ? c->cin[1] : NULL,
                        c->opset >= 18 && c->n_inputs > 3 ? c->cin[3] : NULL, rank, b, e, &why))
        return gr_lfail(c, "%s", why);
    const gr_attr *ma = gr_node_attr(c->n, "mode");
    const char *mode = ma && ma->kind == GR_ATTR_STRING ? ma->s.data : "constant";
    bool constant = strcmp(mode, "constant") == 0, reflect = strcmp(mode, "reflect") == 0;
    te_expr *idx[TE_MAX_DIMS], *inside = NULL;
    if (rank == 0) return gr_lout(c, 0, o.nd, o.ax, te_read_n(X, 1, o.ax));
    for (int d = 0; d < rank; d++) {
        int64_t n = X->shape[d];
        te_expr *i = te_sub(o.ax[d], te_int(ctx, b[d])), *zero = te_int(ctx, 0), *last = te_int(ctx, n - 1);
        if (b[d] <= 0 && o.shape[d] - b[d] <= n) { /* never outside */
            idx[d] = i;
            continue;
        }
        if (constant) {
            te_expr *in = te_and(te_ge(i, zero), te_le(i, last));
            inside = inside ? te_and(inside, in) : in;
        } else if (reflect) {
            i = te_select(te_lt(i, zero), te_sub(zero, i), i);
            i = te_select(te_gt(i, last), te_sub(te_int(ctx, 2 * (n - 1)), i), i);
        }
        /* clamped: edge mode's index, and a constant pad's unread one */
        idx[d] = te_max(te_min(i, last), zero);
    }
    te_expr *x = te_read_n(X, rank, idx);
    if (!constant || !inside) return gr_lout(c, 0, o.nd, o.ax, x);
    te_expr *value;
    if (c->opset >= 11) {
        if (c->n_inputs > 2 && c->tin[2]) {
            te_tensor *V;
            if (!gr_lin(c, 2, "constant_value", &V)) return false;
            te_expr *z[TE_MAX_DIMS];
            for (int d = 0; d < V->ndim; d++) z[d] = te_int(ctx, 0);
            value = te_read_n(V, V->ndim, z);
        } else {
            value = te_const(ctx, o.dt, 0);
        }
    } else {
        const gr_attr *va = gr_node_attr(c->n, "value");
        value = te_const(ctx, o.dt, va && va->kind == GR_ATTR_FLOAT ? (double)va->f : 0.0);
    }
    return gr_lout(c, 0, o.nd, o.ax, te_select(inside, x, value));
}

/* DepthToSpace (DCR: the block offset is the outer part of the channel;
 * CRD: the inner) and SpaceToDepth (the block offset outer). */
static bool lower_depth_space(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    if (!gr_lin(c, 0, "input", &X) || !gr_lout_get(c, 0, &o)) return false;
    te_ctx *ctx = c->ctx;
    te_expr *B = te_int(ctx, attr_int(c->n, "blocksize", 1));
    int64_t b = attr_int(c->n, "blocksize", 1);
    te_expr *idx[4] = {o.ax[0], NULL, NULL, NULL};
    if (strcmp(c->n->op_type, "DepthToSpace") == 0) {
        const gr_attr *ma = gr_node_attr(c->n, "mode");
        bool crd = ma && ma->kind == GR_ATTR_STRING && strcmp(ma->s.data, "CRD") == 0;
        te_expr *i = te_floormod(o.ax[2], B), *j = te_floormod(o.ax[3], B);
        te_expr *blk = te_add(te_mul(i, B), j);
        idx[1] = crd ? te_add(te_mul(o.ax[1], te_int(ctx, b * b)), blk)
                     : te_add(te_mul(blk, te_int(ctx, o.shape[1])), o.ax[1]);
        idx[2] = te_floordiv(o.ax[2], B);
        idx[3] = te_floordiv(o.ax[3], B);
    } else {
        int64_t C = X->shape[1];
        te_expr *q = te_floordiv(o.ax[1], te_int(ctx, C));
        idx[1] = te_floormod(o.ax[1], te_int(ctx, C));
        idx[2] = te_add(te_mul(o.ax[2], B), te_floordiv(q, B));
        idx[3] = te_add(te_mul(o.ax[3], B), te_floormod(q, B));
    }
    return gr_lout(c, 0, o.nd, o.ax, te_read_n(X, 4, idx));
}

/* Trilu: the upper (j - i >= k) or lower (j - i <= k) triangle of the
 * last two dimensions, zeros elsewhere. */
static bool lower_trilu(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    if (!gr_lin(c, 0, "input", &X) || !gr_lout_get(c, 0, &o)) return false;
    int64_t k = 0;
    int n;
    if (c->n_inputs > 1 && c->tin[1] && !gr_tensor_ints(c->cin[1], &k, 1, &n))
        return gr_lfail(c, "input 1 (k) is not a known integer");
    te_expr *diff = te_sub(o.ax[o.nd - 1], o.ax[o.nd - 2]), *kk = te_int(c->ctx, k);
    te_expr *keep = attr_int(c->n, "upper", 1) ? te_ge(diff, kk) : te_le(diff, kk);
    te_expr *y = te_select(keep, te_read_n(X, o.nd, o.ax), te_const(c->ctx, o.dt, 0));
    return gr_lout(c, 0, o.nd, o.ax, y);
}

/* The value of a scalar constant of Range as an immediate of type dt. */
static te_expr *scalar_imm(te_ctx *ctx, const gr_tensor *t, te_dtype dt)
{
    int64_t iv;
    int n;
    if (gr_tensor_ints(t, &iv, 1, &n)) return te_int_t(ctx, dt, iv);
    if (t->elem_type == GR_INT16) {
        int16_t s;
        memcpy(&s, t->data, 2);
        return te_int_t(ctx, dt, s);
    }
    if (t->elem_type == GR_FLOAT) {
        float f;
        memcpy(&f, t->data, 4);
        return te_const(ctx, dt, f);
    }
    double d;
    memcpy(&d, t->data, 8);
    return te_const(ctx, dt, d);
}

/* Range: start + i * delta (its inputs are known at compile time). */
static bool lower_range(gr_lctx *c)
{
    gr_loutput o;
    if (!gr_lout_get(c, 0, &o)) return false;
    for (int k = 0; k < 3; k++)
        if (k >= c->n_inputs || !c->cin[k]) return gr_lfail(c, "input %d is not a known scalar", k);
    te_expr *start = scalar_imm(c->ctx, c->cin[0], o.dt), *delta = scalar_imm(c->ctx, c->cin[2], o.dt);
    c->flops += gr_loutput_numel(&o);
    return gr_lout(c, 0, o.nd, o.ax, te_add(start, te_mul(te_cast(o.dt, o.ax[0]), delta)));
}

/* CumSum: out[i] = the sum of x[r] along the axis over r <= i (r < i
 * exclusive; r >= i, r > i reversed). */
static bool lower_cumsum(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    if (!gr_lin(c, 0, "x", &X) || !gr_lout_get(c, 0, &o)) return false;
    int64_t axis;
    int n;
    if (c->n_inputs < 2 || !gr_tensor_ints(c->cin[1], &axis, 1, &n))
        return gr_lfail(c, "input 1 (axis) is not a known integer");
    int rank = gr_lin_rank(c, 0);
    if (axis < 0) axis += rank;
    if (rank == 0) return gr_lout(c, 0, o.nd, o.ax, te_read_n(X, 1, o.ax));
    te_expr *r = te_reduce_axis(c->ctx, "r", X->shape[axis]);
    if (!r) return gr_lfail(c, "%s", te_ctx_errmsg(c->ctx));
    te_expr *idx[TE_MAX_DIMS];
    for (int d = 0; d < rank; d++) idx[d] = d == axis ? r : o.ax[d];
    bool excl = attr_int(c->n, "exclusive", 0) != 0, rev = attr_int(c->n, "reverse", 0) != 0;
    te_expr *i = o.ax[axis];
    te_expr *take = rev ? (excl ? te_gt(r, i) : te_ge(r, i)) : (excl ? te_lt(r, i) : te_le(r, i));
    te_expr *term = te_select(take, te_read_n(X, rank, idx), te_const(c->ctx, o.dt, 0));
    c->flops += gr_loutput_numel(&o) * (double)(X->shape[axis] + 1) / 2;
    return gr_lout(c, 0, o.nd, o.ax, te_reduce_n(TE_REDUCE_SUM, term, 1, &r));
}

const gr_lower_rule gr_lower_rules_movement[] = {
    {"", "Expand", lower_expand, 1u << 1, 0},
    {"", "Tile", lower_tile, 1u << 1, 0},
    /* pads, axes from opset 11; constant_value is a run-time scalar */
    {"", "Pad", lower_pad, (1u << 1) | (1u << 3), 11},
    {"", "DepthToSpace", lower_depth_space, 0, 0},
    {"", "SpaceToDepth", lower_depth_space, 0, 0},
    {"", "Trilu", lower_trilu, 1u << 1, 0},
    {"", "Range", lower_range, 0x7u, 0},
    {"", "CumSum", lower_cumsum, 1u << 1, 0},
    {0},
};
