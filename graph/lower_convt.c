/* graph/lower_convt.c — ConvTranspose as a gather: each output element
 * sums the inputs whose scattered taps land on it,
 *   Y[n, g Kg + k, o...] = B[g Kg + k] + sum over c < C/group and taps t... of
 *       X[n, g C/group + c, i...] W[g C/group + c, k, t...]
 *   where o + pad_begin - t dilation = i stride, 0 <= i < in,
 * the taps that land between inputs or outside them contributing 0 (their
 * reads clamped into X, their products selected away). Geometry from
 * gr_convt_geometry (infer_convt.c).
 *
 * FLOPs: 2 per multiply-add that lands (N C K/group in... taps), not per
 * tap tried, and 1 per output element for the bias. */
#include "graph/infer_internal.h"
#include "graph/lower.h"

static bool lower_conv_transpose(gr_lctx *c)
{
    te_tensor *X, *W, *B = NULL;
    gr_loutput o;
    if (!gr_lin(c, 0, "X", &X) || !gr_lin(c, 1, "W", &W) || !gr_lout_get(c, 0, &o))
        return false;
    if (c->n_inputs > 2 && c->tin[2] && !gr_lin(c, 2, "B", &B)) return false;
    if (!te_dtype_is_float(o.dt))
        return gr_lfail(c, "input X is %s; Loom computes ConvTranspose in float and double only",
                        te_dtype_str(o.dt));
    te_ctx *ctx = c->ctx;
    int sp = o.nd - 2;
    const gr_attr *ga = gr_node_attr(c->n, "group");
    int64_t group = ga && ga->kind == GR_ATTR_INT ? ga->i : 1;
    int64_t C = X->shape[1], Cg = C / group, Kg = W->shape[1];
    int64_t s[TE_MAX_DIMS], d[TE_MAX_DIMS], pb[TE_MAX_DIMS], pe[TE_MAX_DIMS], out[TE_MAX_DIMS];
    char why[256];
    if (!gr_convt_geometry(c->n, sp, X->shape + 2, W->shape + 2, s, d, pb, pe, out, why, sizeof why))
        return gr_lfail(c, "%s", why);
    /* Reduce over c and the taps. */
    int64_t rs[TE_MAX_DIMS];
    rs[0] = Cg;
    for (int i = 0; i < sp; i++) rs[1 + i] = W->shape[2 + i];
    te_expr *r[TE_MAX_DIMS];
    if (!gr_lfresh_axes(c, "r", true, 1 + sp, rs, r)) return false;
    te_expr *g = te_floordiv(o.ax[1], te_int(ctx, Kg)), *k = te_floormod(o.ax[1], te_int(ctx, Kg));
    te_expr *ch = te_add(te_mul(g, te_int(ctx, Cg)), r[0]);
    te_expr *xi[TE_MAX_DIMS], *wi[TE_MAX_DIMS], *ok = NULL;
    xi[0] = o.ax[0];
    xi[1] = ch;
    wi[0] = ch;
    wi[1] = k;
    double taps = 1;
    for (int i = 0; i < sp; i++) {
        int64_t in = X->shape[2 + i];
        te_expr *t = te_sub(te_add(o.ax[2 + i], te_int(ctx, pb[i])), te_mul(r[1 + i], te_int(ctx, d[i])));
        te_expr *q = te_floordiv(t, te_int(ctx, s[i]));
        te_expr *lands = te_and(te_eq(te_floormod(t, te_int(ctx, s[i])), te_int(ctx, 0)),
                                te_and(te_ge(q, te_int(ctx, 0)), te_lt(q, te_int(ctx, in))));
        ok = ok ? te_and(ok, lands) : lands;
        xi[2 + i] = te_max(te_min(q, te_int(ctx, in - 1)), te_int(ctx, 0));
        wi[2 + i] = r[1 + i];
        taps *= (double)(in * rs[1 + i]);
    }
    te_expr *prod = te_mul(te_read_n(X, o.nd, xi), te_read_n(W, o.nd, wi));
    te_expr *body = te_reduce_n(TE_REDUCE_SUM, te_select(ok, prod, te_const(ctx, o.dt, 0)), 1 + sp, r);
    c->flops += 2.0 * (double)X->shape[0] * (double)C * (double)Kg * taps;
    if (!B) return gr_lout(c, 0, o.nd, o.ax, body);
    te_tensor *S = gr_lstage(c, "sum", o.nd, o.ax, body);
    te_expr *bx[TE_MAX_DIMS];
    if (!S || !gr_lfresh_axes(c, "b", false, o.nd, o.shape, bx)) return false;
    double n = gr_loutput_numel(&o);
    c->flops += n;
    return gr_lout(c, 0, o.nd, bx, te_add(te_read_n(S, o.nd, bx), te_read(B, bx[1])));
}

const gr_lower_rule gr_lower_rules_convt[] = {
    {"", "ConvTranspose", lower_conv_transpose, 0, 0},
    {0},
};
