/* graph/lower_gridsample.c — GridSample (checked by
 * infer_gridsample.c) as one te compute, PyTorch's grid_sample: a grid
 * position is unnormalized to pixel units (align_corners: -1 and 1 are
 * the corner pixels' centres; otherwise the image's outer edges), then
 *   bilinear, nearest: the position is brought inside first (border:
 *     clamped; reflection: reflected at the edges, as often as it takes)
 *     and read with the 4 taps around it, or the nearest (ties to even);
 *   bicubic: the 4x4 taps around the raw position, each tap's position
 *     brought inside as above (Keys' kernel, a = -0.75).
 * Taps outside the image read 0 (what remains after border and
 * reflection is only zeros padding's case). Coordinates and weights are
 * computed in float64 and the sum rounded once to X's type.
 * FLOPs: about 8 per tap. */
#include "graph/infer_internal.h"
#include "graph/lower.h"

typedef struct {
    te_ctx *ctx;
    te_tensor *X;
    te_expr *n, *ch;
    gr_gridsample_pad pad;
    bool align;
} gs;

static te_expr *f64(te_ctx *ctx, double v) { return te_const(ctx, TE_FLOAT64, v); }

static te_expr *call1(te_intrin op, te_expr *a) { return te_call(op, 1, (te_expr *[]){a}); }

static te_expr *unnormalize(const gs *s, te_expr *g, int64_t size)
{
    te_expr *one = f64(s->ctx, 1);
    if (s->align) return te_mul(te_add(g, one), f64(s->ctx, (double)(size - 1) / 2));
    return te_div(te_sub(te_mul(te_add(g, one), f64(s->ctx, (double)size)), one), f64(s->ctx, 2));
}

/* x reflected into [lo, hi] (bounds given doubled, as PyTorch does). */
static te_expr *reflect(const gs *s, te_expr *x, int64_t twice_lo, int64_t twice_hi)
{
    te_ctx *ctx = s->ctx;
    if (twice_lo == twice_hi) return f64(ctx, 0);
    double lo = (double)twice_lo / 2, span = (double)(twice_hi - twice_lo) / 2;
    te_expr *a = te_fabs(te_sub(x, f64(ctx, lo)));
    te_expr *extra = te_call(TE_INTRIN_FMOD, 2, (te_expr *[]){a, f64(ctx, span)});
    te_expr *flips = call1(TE_INTRIN_FLOOR, te_div(a, f64(ctx, span)));
    te_expr *odd = te_ne(te_call(TE_INTRIN_FMOD, 2, (te_expr *[]){flips, f64(ctx, 2)}), f64(ctx, 0));
    return te_select(odd, te_add(te_sub(f64(ctx, span), extra), f64(ctx, lo)), te_add(extra, f64(ctx, lo)));
}

static te_expr *inside(const gs *s, te_expr *x, int64_t size)
{
    te_ctx *ctx = s->ctx;
    te_expr *hi = f64(ctx, (double)(size - 1));
    switch (s->pad) {
    case GR_GS_BORDER: return te_min(te_max(x, f64(ctx, 0)), hi);
    case GR_GS_REFLECTION:
        if (s->align) return reflect(s, x, 0, 2 * (size - 1));
        return te_min(te_max(reflect(s, x, -1, 2 * size - 1), f64(ctx, 0)), hi);
    default: return x;
    }
}

/* X at integer-valued float64 positions (y, x); 0 outside. */
static te_expr *tap(const gs *s, te_expr *y, te_expr *x)
{
    te_ctx *ctx = s->ctx;
    int64_t H = s->X->shape[2], W = s->X->shape[3];
    te_expr *in = te_and(te_and(te_ge(x, f64(ctx, 0)), te_le(x, f64(ctx, (double)(W - 1)))),
                         te_and(te_ge(y, f64(ctx, 0)), te_le(y, f64(ctx, (double)(H - 1)))));
    te_expr *yi = te_max(te_min(te_cast(TE_INT64, y), te_int(ctx, H - 1)), te_int(ctx, 0));
    te_expr *xi = te_max(te_min(te_cast(TE_INT64, x), te_int(ctx, W - 1)), te_int(ctx, 0));
    te_expr *v = te_cast(TE_FLOAT64, te_read(s->X, s->n, s->ch, yi, xi));
    return te_select(in, v, f64(ctx, 0));
}

/* Keys' cubic weights for the taps at -1, 0, 1, 2 from fraction t. */
static void cubic_weights(te_ctx *ctx, te_expr *t, te_expr **w)
{
    const double A = -0.75;
    for (int i = 0; i < 4; i++) {
        te_expr *d = te_fabs(te_sub(t, f64(ctx, i - 1))); /* distance to tap i */
        /* |d| <= 1: (A+2)d^3 - (A+3)d^2 + 1; 1 < |d| < 2: A d^3 - 5A d^2 + 8A d - 4A */
        te_expr *near = te_add(te_mul(te_mul(te_sub(te_mul(f64(ctx, A + 2), d), f64(ctx, A + 3)), d), d), f64(ctx, 1));
        te_expr *far = te_sub(te_mul(te_add(te_mul(te_sub(te_mul(f64(ctx, A), d), f64(ctx, 5 * A)), d), f64(ctx, 8 * A)), d),
                              f64(ctx, 4 * A));
        w[i] = te_select(te_le(d, f64(ctx, 1)), near, far);
    }
}

static bool lower_gridsample(gr_lctx *c)
{
    te_tensor *X, *G;
    gr_loutput o;
    if (!gr_lin(c, 0, "X", &X) || !gr_lin(c, 1, "grid", &G) || !gr_lout_get(c, 0, &o))
        return false;
    gr_gridsample_mode mode;
    gs s = {c->ctx, X, o.ax[0], o.ax[1], GR_GS_ZEROS, false};
    const char *why;
    if (!gr_gridsample_modes(c->n, &mode, &s.pad, &s.align, &why)) return gr_lfail(c, "%s", why);
    te_ctx *ctx = c->ctx;
    int64_t H = X->shape[2], W = X->shape[3];
    te_expr *gx = unnormalize(&s, te_cast(TE_FLOAT64, te_read(G, o.ax[0], o.ax[2], o.ax[3], te_int(ctx, 0))), W);
    te_expr *gy = unnormalize(&s, te_cast(TE_FLOAT64, te_read(G, o.ax[0], o.ax[2], o.ax[3], te_int(ctx, 1))), H);
    te_expr *body;
    double taps;
    if (mode == GR_GS_NEAREST) {
        body = tap(&s, call1(TE_INTRIN_RINT, inside(&s, gy, H)), call1(TE_INTRIN_RINT, inside(&s, gx, W)));
        taps = 1;
    } else if (mode == GR_GS_BILINEAR) {
        te_expr *x = inside(&s, gx, W), *y = inside(&s, gy, H);
        te_expr *x0 = call1(TE_INTRIN_FLOOR, x), *y0 = call1(TE_INTRIN_FLOOR, y);
        te_expr *tx = te_sub(x, x0), *ty = te_sub(y, y0), *one = f64(ctx, 1);
        te_expr *x1 = te_add(x0, one), *y1 = te_add(y0, one);
        te_expr *ux = te_sub(one, tx), *uy = te_sub(one, ty);
        body = te_add(te_add(te_mul(tap(&s, y0, x0), te_mul(ux, uy)), te_mul(tap(&s, y0, x1), te_mul(tx, uy))),
                      te_add(te_mul(tap(&s, y1, x0), te_mul(ux, ty)), te_mul(tap(&s, y1, x1), te_mul(tx, ty))));
        taps = 4;
    } else {
        te_expr *x0 = call1(TE_INTRIN_FLOOR, gx), *y0 = call1(TE_INTRIN_FLOOR, gy);
        te_expr *wx[4], *wy[4];
        cubic_weights(ctx, te_sub(gx, x0), wx);
        cubic_weights(ctx, te_sub(gy, y0), wy);
        body = NULL;
        for (int j = 0; j < 4; j++) {
            te_expr *yj = inside(&s, te_add(y0, f64(ctx, j - 1)), H), *row = NULL;
            for (int i = 0; i < 4; i++) {
                te_expr *t = te_mul(wx[i], tap(&s, yj, inside(&s, te_add(x0, f64(ctx, i - 1)), W)));
                row = row ? te_add(row, t) : t;
            }
            row = te_mul(wy[j], row);
            body = body ? te_add(body, row) : row;
        }
        taps = 16;
    }
    double elems = gr_loutput_numel(&o);
    c->flops += 8 * taps * elems;
    return gr_lout(c, 0, o.nd, o.ax, te_cast(o.dt, body));
}

const gr_lower_rule gr_lower_rules_gridsample[] = {
    {"", "GridSample", lower_gridsample, 0, 0},
    {0},
};
