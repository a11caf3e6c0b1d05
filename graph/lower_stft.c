/* graph/lower_stft.c — STFT (checked by infer_stft.c) as one te
 * reduction per output element over the frame's samples: with
 * s = f frame_step + j, w the window (1 without one) and
 * t = 2 pi ((j k) mod L) / L, Y[b, f, k] = sum_j w[j] (xr[s] cos t + xi[s]
 * sin t) + i w[j] (xi[s] cos t - xr[s] sin t), summed in float64. A
 * direct transform per frame, no FFT. FLOPs: 10 per sample and output. */
#include <math.h>

#include "graph/infer_internal.h"
#include "graph/lower.h"

static bool lower_stft(gr_lctx *c)
{
    te_tensor *X, *Wn = NULL;
    gr_loutput o;
    int nd;
    int64_t shape[TE_MAX_DIMS];
    te_expr *sx[TE_MAX_DIMS];
    if (!gr_lin(c, 0, "signal", &X) || !gr_te_shape(c->tout[0], &nd, shape) ||
        !gr_lfresh_axes(c, "s", false, nd, shape, sx))
        return false;
    if (c->n_inputs > 2 && c->tin[2] && !gr_lin(c, 2, "window", &Wn)) return false;
    te_ctx *ctx = c->ctx;
    int64_t step = 1, L = Wn ? Wn->shape[0] : 0;
    int n;
    if (!c->cin[1] || !gr_tensor_ints(c->cin[1], &step, 1, &n)) return gr_lfail(c, "input 'frame_step' is not a constant");
    if (c->n_inputs > 3 && c->cin[3] && !gr_tensor_ints(c->cin[3], &L, 1, &n))
        return gr_lfail(c, "input 'frame_length' is not a constant");
    te_expr *j = te_reduce_axis(ctx, "j", L);
    if (!j) return gr_lfail(c, "%s", te_ctx_errmsg(ctx));
    te_expr *s = te_add(te_mul(sx[1], te_int(ctx, step)), j), *z = te_int(ctx, 0);
    te_expr *xr = te_cast(TE_FLOAT64, te_read(X, sx[0], s, z));
    te_expr *xi = X->shape[2] == 2 ? te_cast(TE_FLOAT64, te_read(X, sx[0], s, te_int(ctx, 1))) : te_const(ctx, TE_FLOAT64, 0);
    if (Wn) {
        te_expr *wv = te_cast(TE_FLOAT64, te_read(Wn, j));
        xr = te_mul(xr, wv);
        xi = te_mul(xi, wv);
    }
    te_expr *jk = te_floormod(te_mul(j, sx[2]), te_int(ctx, L));
    te_expr *t = te_mul(te_cast(TE_FLOAT64, jk), te_const(ctx, TE_FLOAT64, 2 * M_PI / (double)L));
    te_expr *cs = te_call(TE_INTRIN_COS, 1, (te_expr *[]){t}), *sn = te_call(TE_INTRIN_SIN, 1, (te_expr *[]){t});
    te_expr *re = te_add(te_mul(xr, cs), te_mul(xi, sn)), *im = te_sub(te_mul(xi, cs), te_mul(xr, sn));
    te_expr *part = te_select(te_eq(sx[3], te_int(ctx, 0)), re, im);
    te_tensor *S = gr_lstage(c, "sum", nd, sx, te_sum(part, j));
    if (!S) return false;
    c->flops += 10.0 * (double)(shape[0] * shape[1] * shape[2] * 2) * (double)L;
    if (!gr_lout_get(c, 0, &o)) return false;
    return gr_lout(c, 0, o.nd, o.ax, te_cast(o.dt, te_read_n(S, o.nd, o.ax)));
}

const gr_lower_rule gr_lower_rules_stft[] = {
    {"", "STFT", lower_stft, (1u << 1) | (1u << 3), 0},
    {0},
};
