/* graph/lower_dft.c — DFT (checked by infer_dft.c) as one te reduction
 * per output element over the signal's samples (those past the input's
 * extent are the zero padding and add nothing): with
 * t = 2 pi ((j k) mod L) / L, the forward transform sums
 * (xr cos t + xi sin t) + i (xi cos t - xr sin t), the inverse
 * (xr cos t - xi sin t) + i (xi cos t + xr sin t), over L. The angle is
 * reduced modulo L in integers first so that it stays below 2 pi at any
 * length; sums run in float64. A direct O(L^2) transform, no FFT.
 * FLOPs: 8 per sample and output element. */
#include <math.h>

#include "graph/infer_internal.h"
#include "graph/lower.h"

static bool lower_dft(gr_lctx *c)
{
    te_tensor *X;
    int nd;
    int64_t shape[TE_MAX_DIMS];
    te_expr *ax[TE_MAX_DIMS];
    /* the float64 sums are a stage on axes of their own; the output rounds them */
    if (!gr_lin(c, 0, "input", &X) || !gr_te_shape(c->tout[0], &nd, shape) ||
        !gr_lfresh_axes(c, "s", false, nd, shape, ax))
        return false;
    te_ctx *ctx = c->ctx;
    int axis;
    if (!gr_dft_axis(c->n, nd, &axis)) return gr_lfail(c, "attribute 'axis' is out of range");
    const gr_tensor *lt = c->n_inputs > 1 ? c->cin[1] : NULL;
    int64_t n = X->shape[axis], L = n;
    int nl;
    if (lt && !gr_tensor_ints(lt, &L, 1, &nl)) return gr_lfail(c, "input 'dft_length' is not a constant");
    const gr_attr *ia = gr_node_attr(c->n, "inverse");
    bool inverse = ia && ia->kind == GR_ATTR_INT && ia->i != 0;
    bool complex_in = X->shape[nd - 1] == 2;
    int64_t m = n < L ? n : L;
    te_expr *j = te_reduce_axis(ctx, "j", m);
    if (!j) return gr_lfail(c, "%s", te_ctx_errmsg(ctx));
    te_expr *xi[TE_MAX_DIMS];
    for (int d = 0; d < nd; d++) xi[d] = ax[d];
    xi[axis] = j;
    xi[nd - 1] = te_int(ctx, 0);
    te_expr *xr = te_cast(TE_FLOAT64, te_read_n(X, nd, xi));
    te_expr *xim = te_const(ctx, TE_FLOAT64, 0);
    if (complex_in) {
        te_expr *xj[TE_MAX_DIMS];
        for (int d = 0; d < nd; d++) xj[d] = xi[d];
        xj[nd - 1] = te_int(ctx, 1);
        xim = te_cast(TE_FLOAT64, te_read_n(X, nd, xj));
    }
    te_expr *jk = te_floormod(te_mul(j, ax[axis]), te_int(ctx, L));
    te_expr *t = te_mul(te_cast(TE_FLOAT64, jk), te_const(ctx, TE_FLOAT64, 2 * M_PI / (double)L));
    te_expr *cs = te_call(TE_INTRIN_COS, 1, (te_expr *[]){t}), *sn = te_call(TE_INTRIN_SIN, 1, (te_expr *[]){t});
    te_expr *re, *im;
    if (inverse) {
        re = te_sub(te_mul(xr, cs), te_mul(xim, sn));
        im = te_add(te_mul(xim, cs), te_mul(xr, sn));
    } else {
        re = te_add(te_mul(xr, cs), te_mul(xim, sn));
        im = te_sub(te_mul(xim, cs), te_mul(xr, sn));
    }
    te_expr *part = te_select(te_eq(ax[nd - 1], te_int(ctx, 0)), re, im);
    double outs = 1;
    for (int d = 0; d < nd; d++) outs *= (double)shape[d];
    c->flops += 8 * outs * (double)m;
    te_tensor *S = gr_lstage(c, "sum", nd, ax, te_sum(part, j));
    if (!S) return false;
    gr_loutput o;
    if (!gr_lout_get(c, 0, &o)) return false;
    te_expr *v = te_read_n(S, o.nd, o.ax);
    if (inverse) v = te_div(v, te_const(ctx, TE_FLOAT64, (double)L));
    return gr_lout(c, 0, o.nd, o.ax, te_cast(o.dt, v));
}

const gr_lower_rule gr_lower_rules_dft[] = {
    {"", "DFT", lower_dft, 1u << 1, 0},
    {0},
};
