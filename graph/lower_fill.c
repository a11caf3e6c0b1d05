/* graph/lower_fill.c — EyeLike, HannWindow, HammingWindow, BlackmanWindow
 * and OneHot: each output element a function of its index (OneHot's of
 * the index read at its position). Attributes and constants were
 * checked by infer_fill.c.
 *
 * The windows are computed in double and converted to the output type
 * (ONNX's reference computes in the output type; double is the closer
 * value). FLOPs: the windows 4 to 8 per element; EyeLike and OneHot 0
 * (they compare and select). */
#include "graph/infer_internal.h"
#include "graph/lower.h"

#include <math.h>
#include <string.h>

static int64_t attr_int(const gr_node *n, const char *name, int64_t dflt)
{
    const gr_attr *a = gr_node_attr(n, name);
    return a && a->kind == GR_ATTR_INT ? a->i : dflt;
}

/* EyeLike: 1 where column - row == k. The input gives the shape only. */
static bool lower_eyelike(gr_lctx *c)
{
    gr_loutput o;
    if (!gr_lout_get(c, 0, &o)) return false;
    te_expr *on = te_eq(te_sub(o.ax[1], o.ax[0]), te_int(c->ctx, attr_int(c->n, "k", 0)));
    return gr_lout(c, 0, o.nd, o.ax, te_select(on, te_const(c->ctx, o.dt, 1), te_const(c->ctx, o.dt, 0)));
}

/* w[n] with x = 2 pi n / N, N = size (periodic) or size - 1 (symmetric):
 * Hann 0.5 - 0.5 cos x (sin^2(x / 2)), Hamming 25/46 - 21/46 cos x,
 * Blackman 0.42 - 0.5 cos x + 0.08 cos 2x. */
static bool lower_window(gr_lctx *c)
{
    gr_loutput o;
    if (!gr_lout_get(c, 0, &o)) return false;
    te_ctx *ctx = c->ctx;
    int64_t size = o.shape[0];
    double N = (double)(attr_int(c->n, "periodic", 1) ? size : size - 1);
    te_expr *x = te_mul(te_cast(TE_FLOAT64, o.ax[0]), te_float_t(ctx, TE_FLOAT64, 2 * M_PI / N));
    te_expr *cx = te_call(TE_INTRIN_COS, 1, &x), *w;
    const char *op = c->n->op_type;
#define D(v) te_float_t(ctx, TE_FLOAT64, (v))
    if (strcmp(op, "HannWindow") == 0) {
        w = te_sub(D(0.5), te_mul(D(0.5), cx));
        c->flops += 4.0 * (double)size;
    } else if (strcmp(op, "HammingWindow") == 0) {
        w = te_sub(D(25.0 / 46.0), te_mul(D(21.0 / 46.0), cx));
        c->flops += 4.0 * (double)size;
    } else {
        te_expr *x2 = te_mul(x, D(2));
        te_expr *c2 = te_call(TE_INTRIN_COS, 1, &x2);
        w = te_add(te_sub(D(0.42), te_mul(D(0.5), cx)), te_mul(D(0.08), c2));
        c->flops += 8.0 * (double)size;
    }
#undef D
    return gr_lout(c, 0, o.nd, o.ax, te_cast(o.dt, w));
}

/* OneHot: values[1] where the index (truncated to an integer, a negative
 * one counting from depth) equals the position on `axis`, values[0]
 * elsewhere. */
static bool lower_onehot(gr_lctx *c)
{
    te_tensor *I, *V;
    gr_loutput o;
    if (!gr_lin(c, 0, "indices", &I) || !gr_lin(c, 2, "values", &V) ||
        !gr_lout_get(c, 0, &o))
        return false;
    int r = gr_lin_rank(c, 0) + 1;
    int64_t axis = attr_int(c->n, "axis", -1);
    if (axis < 0) axis += r;
    int64_t depth = o.shape[axis];
    te_expr *idx[TE_MAX_DIMS];
    for (int d = 0, k = 0; d < r; d++)
        if (d != axis) idx[k++] = o.ax[d];
    te_ctx *ctx = c->ctx;
    te_expr *i = r == 1 ? te_read(I, te_int(ctx, 0)) : te_read_n(I, r - 1, idx);
    i = te_cast(TE_INT64, i);
    i = te_select(te_lt(i, te_int(ctx, 0)), te_add(i, te_int(ctx, depth)), i);
    te_expr *y = te_select(te_eq(i, o.ax[axis]), te_read(V, te_int(ctx, 1)), te_read(V, te_int(ctx, 0)));
    return gr_lout(c, 0, o.nd, o.ax, y);
}

const gr_lower_rule gr_lower_rules_fill[] = {
    {"", "EyeLike", lower_eyelike, 0, 0},
    {"", "HannWindow", lower_window, 1u << 0, 0},
    {"", "HammingWindow", lower_window, 1u << 0, 0},
    {"", "BlackmanWindow", lower_window, 1u << 0, 0},
    {"", "OneHot", lower_onehot, 1u << 1, 0},
    {0},
};
