/* graph/lower_nn.c — convolution, pooling, matrix products,
 * normalization, Softmax, LogSoftmax and Hardmax (the Reduce operators:
 * lower_reduce.c).
 *
 * A te reduction must be the whole body of its compute, so every
 * operator that combines a reduction with other arithmetic (bias, alpha,
 * a mean's division, softmax's normalization) is a chain of stages, each
 * named after the node with a suffix. Padded windows read a separate
 * padding stage (as TVM's topi does) so the window's own body stays an
 * affine read the scheduler can tile. */
#include "graph/infer_internal.h"
#include "graph/lower.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---------------- attributes ---------------- */

static int64_t attr_int(const gr_lctx *c, const char *name, int64_t dflt)
{
    const gr_attr *a = gr_node_attr(c->n, name);
    return a && a->kind == GR_ATTR_INT ? a->i : dflt;
}

static double attr_float(const gr_lctx *c, const char *name, double dflt)
{
    const gr_attr *a = gr_node_attr(c->n, name);
    return a && a->kind == GR_ATTR_FLOAT ? (double)a->f : dflt;
}

/* The INTS attribute into out (at most max); false when absent. */
static bool attr_ints(const gr_lctx *c, const char *name, int64_t *out, int max, int *n)
{
    const gr_attr *a = gr_node_attr(c->n, name);
    if (!a || a->kind != GR_ATTR_INTS) return false;
    *n = 0;
    for (size_t i = 0; i < a->n && *n < max; i++) out[(*n)++] = a->ints[i];
    return true;
}

static bool attr_str_is(const gr_lctx *c, const char *name, const char *dflt, const char *want)
{
    const gr_attr *a = gr_node_attr(c->n, name);
    if (!a || a->kind != GR_ATTR_STRING) return strcmp(dflt, want) == 0;
    return a->s.len == strlen(want) && memcmp(a->s.data, want, a->s.len) == 0;
}

/* ---------------- stages ---------------- */



/* v, with a read of t that never counts: a kernel takes every input of
 * the node as an argument, so an input whose value the node ignores (C
 * when beta is 0, as ORT ignores it; the running statistics nobody asks
 * for) must still be read. ax0 is a data axis, never negative. */
static te_expr *keep_input(te_expr *v, te_tensor *t, te_expr *ax0)
{
    if (!v || !t) return v;
    te_ctx *ctx = v->ctx;
    te_expr *zero[TE_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) zero[d] = te_int(ctx, 0);
    te_expr *never = te_lt(ax0, te_int(ctx, 0));
    return te_select(never, te_cast(v->dtype, te_read_n(t, t->ndim, zero)), v);
}

/* Exact element counts for index arithmetic (planes, per-channel
 * counts); FLOP counts use gr_numel's double. */
static int64_t numel(int nd, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= shape[d];
    return n;
}

/* A reduction over the dimensions of a tensor of shape full[nd] that
 * `mask` marks: the stage's axes (the kept dimensions, extent 1 where
 * reduced), its reduce axes, and the index into the full tensor. */
typedef struct {
    int nd, nr;
    int64_t shape[TE_MAX_DIMS];
    te_expr *ax[TE_MAX_DIMS], *rax[TE_MAX_DIMS], *idx[TE_MAX_DIMS];
    int64_t count; /* elements combined per result */
} red_iter;

static bool red_iter_init(gr_lctx *c, int nd, const int64_t *full, const bool *mask, red_iter *it)
{
    int64_t rshape[TE_MAX_DIMS];
    it->nd = nd;
    it->nr = 0;
    it->count = 1;
    for (int d = 0; d < nd; d++) {
        it->shape[d] = mask[d] ? 1 : full[d];
        if (mask[d]) {
            rshape[it->nr++] = full[d];
            it->count *= full[d];
        }
    }
    if (!gr_lfresh_axes(c, "s", false, nd, it->shape, it->ax) ||
        !gr_lfresh_axes(c, "r", true, it->nr, rshape, it->rax))
        return false;
    for (int d = 0, r = 0; d < nd; d++) it->idx[d] = mask[d] ? it->rax[r++] : it->ax[d];
    return true;
}

/* The reduction of `source` (an expression of it->idx) as a stage. */
static te_tensor *reduce_stage(gr_lctx *c, const char *suffix, const red_iter *it, te_reduce_op op,
                               te_expr *source)
{
    return gr_lstage(c, suffix, it->nd, it->ax, te_reduce_n(op, source, it->nr, it->rax));
}

/* Reads a keepdims statistic (extent 1 on the masked dimensions) at the
 * full tensor's axes. */
static te_expr *read_stat(te_tensor *s, const bool *mask, te_expr *const *ax)
{
    te_expr *idx[TE_MAX_DIMS];
    for (int d = 0; d < s->ndim; d++) idx[d] = mask[d] ? te_int(s->ctx, 0) : ax[d];
    return te_read_n(s, s->ndim, idx);
}

/* ---------------- sliding windows (Conv, MaxPool, AveragePool) ---------------- */

typedef struct {
    int sp; /* spatial dimensions */
    int64_t in[TE_MAX_DIMS], k[TE_MAX_DIMS], s[TE_MAX_DIMS], d[TE_MAX_DIMS];
    int64_t pb[TE_MAX_DIMS], pe[TE_MAX_DIMS], out[TE_MAX_DIMS];
} window;

/* The window geometry; the attributes were checked by inference, the
 * output extents (out) are the inferred ones. */
static void window_read(const gr_lctx *c, int sp, const int64_t *in, const int64_t *k,
                        const int64_t *out, window *w)
{
    int64_t v[2 * TE_MAX_DIMS];
    int n;
    w->sp = sp;
    for (int i = 0; i < sp; i++) {
        w->in[i] = in[i];
        w->k[i] = k[i];
        w->out[i] = out[i];
        w->s[i] = w->d[i] = 1;
        w->pb[i] = w->pe[i] = 0;
    }
    if (attr_ints(c, "strides", v, sp, &n) && n == sp)
        for (int i = 0; i < sp; i++) w->s[i] = v[i];
    if (attr_ints(c, "dilations", v, sp, &n) && n == sp)
        for (int i = 0; i < sp; i++) w->d[i] = v[i];
    bool upper = attr_str_is(c, "auto_pad", "NOTSET", "SAME_UPPER");
    bool lower = attr_str_is(c, "auto_pad", "NOTSET", "SAME_LOWER");
    if (upper || lower) {
        for (int i = 0; i < sp; i++) {
            int64_t total = (out[i] - 1) * w->s[i] + (k[i] - 1) * w->d[i] + 1 - in[i];
            if (total < 0) total = 0;
            /* SAME_UPPER puts the odd pad at the end, SAME_LOWER at the start. */
            w->pb[i] = upper ? total / 2 : total - total / 2;
            w->pe[i] = total - w->pb[i];
        }
    } else if (attr_str_is(c, "auto_pad", "NOTSET", "NOTSET") &&
               attr_ints(c, "pads", v, 2 * sp, &n) && n == 2 * sp) {
        for (int i = 0; i < sp; i++) {
            w->pb[i] = v[i];
            w->pe[i] = v[sp + i];
        }
    }
}

/* The extent of the padded input the windows read in spatial dimension i
 * (with ceil_mode the last window may reach past the end padding). */
static int64_t window_span(const window *w, int i)
{
    return (w->out[i] - 1) * w->s[i] + (w->k[i] - 1) * w->d[i] + 1;
}

/* X (N, C, spatial..., lanes...) padded with `value` as the windows read
 * it: index p of spatial dimension i holds X[p - pb] when that is inside.
 * X itself when no window reads outside it. Dimensions after the spatial
 * ones (the block lane of NCHW[b]c) are carried through. */
static te_tensor *pad_window(gr_lctx *c, te_tensor *X, const window *w, te_expr *value)
{
    int nd = X->ndim;
    int64_t shape[TE_MAX_DIMS] = {X->shape[0], X->shape[1]};
    for (int d = 2 + w->sp; d < nd; d++) shape[d] = X->shape[d];
    bool need = false;
    for (int i = 0; i < w->sp; i++) {
        shape[2 + i] = window_span(w, i);
        if (w->pb[i] > 0 || shape[2 + i] > w->in[i]) need = true;
    }
    if (!need) return X;
    te_expr *ax[TE_MAX_DIMS], *idx[TE_MAX_DIMS];
    if (!gr_lfresh_axes(c, "p", false, nd, shape, ax)) return NULL;
    te_ctx *ctx = c->ctx;
    te_expr *inside = NULL;
    idx[0] = ax[0];
    idx[1] = ax[1];
    for (int d = 2 + w->sp; d < nd; d++) idx[d] = ax[d];
    for (int i = 0; i < w->sp; i++) {
        te_expr *p = ax[2 + i], *q = te_sub(p, te_int(ctx, w->pb[i]));
        /* Clamped so the read stays in bounds whichever side the select
         * takes (both are evaluated). */
        if (w->pb[i] > 0) {
            te_expr *cond = te_ge(p, te_int(ctx, w->pb[i]));
            inside = inside ? te_and(inside, cond) : cond;
            q = te_max(q, te_int(ctx, 0));
        }
        if (shape[2 + i] > w->pb[i] + w->in[i]) {
            te_expr *cond = te_lt(p, te_int(ctx, w->pb[i] + w->in[i]));
            inside = inside ? te_and(inside, cond) : cond;
            q = te_min(q, te_int(ctx, w->in[i] - 1));
        }
        idx[2 + i] = q;
    }
    te_expr *x = te_read_n(X, nd, idx);
    return gr_lstage(c, "pad", nd, ax, inside ? te_select(inside, x, value) : x);
}

/* The padded input's index of tap r[i] of the window at output axes ax. */
static void window_index(te_ctx *ctx, const window *w, te_expr *const *ax, te_expr *const *r,
                         te_expr **idx)
{
    for (int i = 0; i < w->sp; i++) {
        te_expr *o = w->s[i] == 1 ? ax[2 + i] : te_mul(ax[2 + i], te_int(ctx, w->s[i]));
        te_expr *t = w->d[i] == 1 ? r[i] : te_mul(r[i], te_int(ctx, w->d[i]));
        idx[2 + i] = te_add(o, t);
    }
}

/* ---------------- Conv ---------------- */

/* Conv; ConvInteger (inputs 2 and 3 its zero points, per tensor for X,
 * per tensor or output channel for W; int32 products of the operands
 * less their zero points; the padding holds X's zero point, so it adds
 * nothing, as ONNX defines); QLinearConv (x, x_scale, x_zero_point, w,
 * w_scale, w_zero_point, y_scale, y_zero_point, int32 B): ConvInteger's
 * sum plus B, scaled by x_scale w_scale / y_scale in float64, rounded to
 * nearest even, shifted by y's zero point and saturated to y's type. */
static bool lower_conv(gr_lctx *c)
{
    te_tensor *X, *W, *B = NULL, *XZ = NULL, *WZ = NULL;
    gr_loutput o;
    bool qlinear = strcmp(c->n->op_type, "QLinearConv") == 0;
    bool integer = qlinear || strcmp(c->n->op_type, "ConvInteger") == 0;
    int iw = qlinear ? 3 : 1, ixz = 2, iwz = qlinear ? 5 : 3;
    if (!gr_lin(c, 0, "X", &X) || !gr_lin(c, iw, "W", &W)) return false;
    if (integer) {
        if (c->n_inputs > ixz && c->tin[ixz] && !gr_lin(c, ixz, "x_zero_point", &XZ)) return false;
        if (c->n_inputs > iwz && c->tin[iwz] && !gr_lin(c, iwz, "w_zero_point", &WZ)) return false;
        if (qlinear && c->n_inputs > 8 && c->tin[8] && !gr_lin(c, 8, "B", &B)) return false;
    } else if (c->n_inputs > 2 && c->tin[2] && !gr_lin(c, 2, "B", &B)) {
        return false;
    }
    if (!gr_lout_get(c, 0, &o)) return false;
    int sp = o.nd - 2;
    window w;
    window_read(c, sp, X->shape + 2, W->shape + 2, o.shape + 2, &w);
    te_expr *zero_in = integer ? (XZ ? te_read(XZ, te_int(c->ctx, 0)) : te_const(c->ctx, X->dtype, 0))
                               : te_const(c->ctx, o.dt, 0);
    te_tensor *Xp = pad_window(c, X, &w, zero_in);
    if (!Xp) return false;

    int64_t group = attr_int(c, "group", 1), Cg = W->shape[1], Mg = o.shape[1] / group;
    int64_t rshape[TE_MAX_DIMS] = {Cg};
    for (int i = 0; i < sp; i++) rshape[1 + i] = w.k[i];
    te_expr *r[TE_MAX_DIMS], *cax[TE_MAX_DIMS], *xi[TE_MAX_DIMS], *wi[TE_MAX_DIMS];
    if (!gr_lfresh_axes(c, "r", true, 1 + sp, rshape, r)) return false;
    if (B || qlinear) {
        if (!gr_lfresh_axes(c, "c", false, o.nd, o.shape, cax)) return false;
    } else {
        memcpy(cax, o.ax, (size_t)o.nd * sizeof *o.ax);
    }
    te_ctx *ctx = c->ctx;
    /* Output channel m reads the input channels of its group. */
    xi[0] = cax[0];
    xi[1] = group == 1 ? r[0]
                       : te_add(te_mul(te_floordiv(cax[1], te_int(ctx, Mg)), te_int(ctx, Cg)),
                                r[0]);
    window_index(ctx, &w, cax, r + 1, xi);
    wi[0] = cax[1];
    for (int i = 0; i < 1 + sp; i++) wi[1 + i] = r[i];
    te_expr *xv = te_read_n(Xp, o.nd, xi), *wv = te_read_n(W, o.nd, wi);
    if (integer) {
        te_expr *z = te_int(ctx, 0);
        xv = te_cast(TE_INT32, xv);
        wv = te_cast(TE_INT32, wv);
        if (XZ) xv = te_sub(xv, te_cast(TE_INT32, te_read(XZ, z)));
        if (WZ) wv = te_sub(wv, te_cast(TE_INT32, te_read(WZ, WZ->shape[0] == 1 ? z : cax[1])));
    }
    te_expr *sum = te_reduce_n(TE_REDUCE_SUM, te_mul(xv, wv), 1 + sp, r);
    c->flops += 2.0 * gr_numel(o.nd, o.shape) * gr_numel(1 + sp, rshape);
    if (!B && !qlinear) return gr_lout(c, 0, o.nd, o.ax, sum);
    te_tensor *conv = gr_lstage(c, "conv", o.nd, cax, sum);
    if (!conv) return false;
    c->flops += gr_numel(o.nd, o.shape);
    te_expr *y = te_read_n(conv, o.nd, o.ax);
    if (B) y = te_add(y, te_read(B, o.ax[1]));
    if (!qlinear) return gr_lout(c, 0, o.nd, o.ax, y);
    /* requantize: inputs 1 x_scale, 4 w_scale (per tensor or channel), 6 y_scale, 7 y_zero_point */
    te_tensor *XS, *WS, *YS, *YZ;
    if (!gr_lin(c, 1, "x_scale", &XS) || !gr_lin(c, 4, "w_scale", &WS) || !gr_lin(c, 6, "y_scale", &YS) ||
        !gr_lin(c, 7, "y_zero_point", &YZ))
        return false;
    te_expr *z = te_int(ctx, 0);
    te_expr *ws = te_cast(TE_FLOAT64, te_read(WS, WS->shape[0] == 1 ? z : o.ax[1]));
    te_expr *scale = te_div(te_mul(te_cast(TE_FLOAT64, te_read(XS, z)), ws), te_cast(TE_FLOAT64, te_read(YS, z)));
    te_expr *q = te_call(TE_INTRIN_RINT, 1, (te_expr *[]){te_mul(te_cast(TE_FLOAT64, y), scale)});
    q = te_add(q, te_cast(TE_FLOAT64, te_read(YZ, z)));
    bool is_u8 = c->tout[0]->elem_type == GR_UINT8;
    q = te_min(te_max(q, te_const(ctx, TE_FLOAT64, is_u8 ? 0 : -128)), te_const(ctx, TE_FLOAT64, is_u8 ? 255 : 127));
    c->flops += 4.0 * gr_numel(o.nd, o.shape);
    return gr_lout(c, 0, o.nd, o.ax, te_cast(o.dt, q));
}

/* ---------------- pools ---------------- */

/* Loom's blocked twins (loom:MaxPoolNCHWc, ...: graph/infer_layout.c)
 * hold one block lane after the spatial dimensions, which every pool
 * carries through as it does N and C; their pads are explicit. */
static int pool_lanes(const gr_lctx *c) { return strcmp(c->n->domain, "loom") == 0 ? 1 : 0; }

static bool pool_window(gr_lctx *c, te_tensor *X, int nd, const int64_t *shape, window *w)
{
    int64_t k[TE_MAX_DIMS];
    int n = 0, sp = nd - 2 - pool_lanes(c);
    if (!attr_ints(c, "kernel_shape", k, TE_MAX_DIMS, &n) || n != sp)
        return gr_lfail(c, "attribute 'kernel_shape' is missing or has the wrong length");
    window_read(c, sp, X->shape + 2, k, shape + 2, w);
    return true;
}

/* The window's read of the padded input at output axes ax, taps r. */
static void pool_index(te_ctx *ctx, const window *w, int nd, te_expr *const *ax, te_expr *const *r,
                       te_expr **xi)
{
    xi[0] = ax[0];
    xi[1] = ax[1];
    for (int d = 2 + w->sp; d < nd; d++) xi[d] = ax[d];
    window_index(ctx, w, ax, r, xi);
}

/* Flat index (row-major, or column-major over the spatial dimensions
 * when `colmajor`) into X of the position q[] of plane (n, ch). */
static te_expr *flat_index(te_ctx *ctx, const window *w, int64_t C, te_expr *n, te_expr *ch,
                           te_expr *const *q, bool colmajor)
{
    int64_t plane = numel(w->sp, w->in);
    te_expr *e = te_mul(te_add(te_mul(n, te_int(ctx, C)), ch), te_int(ctx, plane));
    int64_t stride = 1;
    for (int j = 0; j < w->sp; j++) {
        int i = colmajor ? j : w->sp - 1 - j;
        e = te_add(e, te_mul(q[i], te_int(ctx, stride)));
        stride *= w->in[i];
    }
    return e;
}

/* MaxPool's Indices: the first maximum of each window in scan order
 * (the smallest row-major position, as ORT picks it), then written in
 * the storage order. */
static bool maxpool_indices(gr_lctx *c, te_tensor *X, te_tensor *Xp, te_tensor *Y, const window *w,
                            bool colmajor)
{
    gr_loutput o;
    te_expr *sax[TE_MAX_DIMS], *r[TE_MAX_DIMS], *pi[TE_MAX_DIMS], *q[TE_MAX_DIMS];
    if (!gr_lout_get(c, 1, &o) || !gr_lfresh_axes(c, "a", false, o.nd, o.shape, sax) ||
        !gr_lfresh_axes(c, "r", true, w->sp, w->k, r))
        return false;
    te_ctx *ctx = c->ctx;
    pi[0] = sax[0];
    pi[1] = sax[1];
    window_index(ctx, w, sax, r, pi);
    te_expr *inside = te_bool(ctx, true);
    for (int i = 0; i < w->sp; i++) {
        q[i] = te_sub(pi[2 + i], te_int(ctx, w->pb[i]));
        te_expr *in_dim = te_and(te_ge(q[i], te_int(ctx, 0)), te_lt(q[i], te_int(ctx, w->in[i])));
        inside = te_and(inside, in_dim);
    }
    te_expr *hit = te_and(inside, te_eq(te_read_n(Xp, o.nd, pi), te_read_n(Y, o.nd, sax)));
    te_expr *pos = flat_index(ctx, w, X->shape[1], sax[0], sax[1], q, false);
    te_expr *first =
        te_reduce_n(TE_REDUCE_MIN, te_select(hit, pos, te_int(ctx, INT64_MAX)), w->sp, r);
    if (!colmajor) return gr_lout(c, 1, o.nd, sax, first);
    te_tensor *F = gr_lstage(c, "argmax", o.nd, sax, first);
    if (!F) return false;
    /* Row-major position back to coordinates, then column-major. */
    te_expr *rest = te_read_n(F, o.nd, o.ax), *co[TE_MAX_DIMS];
    int64_t plane = numel(w->sp, w->in);
    te_expr *base = te_mul(te_floordiv(rest, te_int(ctx, plane)), te_int(ctx, plane));
    rest = te_floormod(rest, te_int(ctx, plane));
    for (int i = w->sp - 1; i >= 0; i--) {
        co[i] = te_floormod(rest, te_int(ctx, w->in[i]));
        rest = te_floordiv(rest, te_int(ctx, w->in[i]));
    }
    te_expr *e = base;
    int64_t stride = 1;
    for (int i = 0; i < w->sp; i++) {
        e = te_add(e, te_mul(co[i], te_int(ctx, stride)));
        stride *= w->in[i];
    }
    return gr_lout(c, 1, o.nd, o.ax, e);
}

static bool lower_maxpool(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    te_expr *r[TE_MAX_DIMS], *xi[TE_MAX_DIMS];
    window w;
    if (!gr_lin(c, 0, "X", &X) || !gr_lout_get(c, 0, &o) ||
        !pool_window(c, X, o.nd, o.shape, &w))
        return false;
    int64_t order = attr_int(c, "storage_order", 0);
    if (order != 0 && order != 1)
        return gr_lfail(c, "attribute 'storage_order' is %" PRId64 " (0 or 1)", order);
    if (pool_lanes(c) && c->n_outputs > 1)
        return gr_lfail(c, "the blocked MaxPool has no Indices output");
    te_ctx *ctx = c->ctx;
    /* Padding never wins a maximum: a window always holds a real element. */
    te_tensor *Xp = pad_window(c, X, &w, te_reduce_identity(ctx, TE_REDUCE_MAX, o.dt));
    if (!Xp || !gr_lfresh_axes(c, "r", true, w.sp, w.k, r)) return false;
    pool_index(ctx, &w, o.nd, o.ax, r, xi);
    c->flops += gr_numel(o.nd, o.shape) * gr_numel(w.sp, w.k);
    if (!gr_lout(c, 0, o.nd, o.ax, te_reduce_n(TE_REDUCE_MAX, te_read_n(Xp, o.nd, xi), w.sp, r)))
        return false;
    if (c->n_outputs < 2 || !c->tout[1]) return true;
    c->flops += 2.0 * gr_numel(o.nd, o.shape) * gr_numel(w.sp, w.k);
    return maxpool_indices(c, X, Xp, c->out[0], &w, order == 1);
}

/* How many taps of the window at output position o of dimension i fall
 * in [lo, hi] (input coordinates), as an expression of o. */
static te_expr *taps_between(te_ctx *ctx, const window *w, int i, te_expr *o, int64_t lo,
                             int64_t hi)
{
    te_expr *start = te_sub(te_mul(o, te_int(ctx, w->s[i])), te_int(ctx, w->pb[i]));
    te_expr *d = te_int(ctx, w->d[i]);
    /* First tap r with start + r*d >= lo: ceil((lo - start) / d). */
    te_expr *first =
        te_floordiv(te_add(te_sub(te_int(ctx, lo), start), te_int(ctx, w->d[i] - 1)), d);
    te_expr *last = te_floordiv(te_sub(te_int(ctx, hi), start), d);
    first = te_max(first, te_int(ctx, 0));
    last = te_min(last, te_int(ctx, w->k[i] - 1));
    /* At least 1: a dilated window may miss the input entirely, and its
     * sum (0) is then divided by 1, not by 0. */
    return te_max(te_add(te_sub(last, first), te_int(ctx, 1)), te_int(ctx, 1));
}

/* Whether every window of dimension i holds all k taps within [lo, hi]. */
static bool taps_all_inside(const window *w, int i, int64_t lo, int64_t hi)
{
    int64_t start_last = (w->out[i] - 1) * w->s[i] - w->pb[i];
    return -w->pb[i] >= lo && start_last + (w->k[i] - 1) * w->d[i] <= hi;
}

static bool lower_avgpool(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    te_expr *sax[TE_MAX_DIMS], *r[TE_MAX_DIMS], *xi[TE_MAX_DIMS];
    window w;
    if (!gr_lin(c, 0, "X", &X) || !gr_lout_get(c, 0, &o) ||
        !pool_window(c, X, o.nd, o.shape, &w))
        return false;
    te_ctx *ctx = c->ctx;
    te_tensor *Xp = pad_window(c, X, &w, te_const(ctx, o.dt, 0));
    if (!Xp || !gr_lfresh_axes(c, "r", true, w.sp, w.k, r) ||
        !gr_lfresh_axes(c, "a", false, o.nd, o.shape, sax))
        return false;
    pool_index(ctx, &w, o.nd, sax, r, xi);
    te_tensor *S = gr_lstage(c, "sum", o.nd, sax,
                             te_reduce_n(TE_REDUCE_SUM, te_read_n(Xp, o.nd, xi), w.sp, r));
    if (!S) return false;
    /* The divisor counts the taps inside the input, or inside input and
     * pads with count_include_pad (not past the end pad: ceil_mode). */
    bool incl = attr_int(c, "count_include_pad", 0) != 0;
    int64_t fixed = 1;
    te_expr *count = NULL;
    for (int i = 0; i < w.sp; i++) {
        int64_t lo = incl ? -w.pb[i] : 0, hi = incl ? w.in[i] + w.pe[i] - 1 : w.in[i] - 1;
        if (taps_all_inside(&w, i, lo, hi)) {
            fixed *= w.k[i];
            continue;
        }
        te_expr *t = taps_between(ctx, &w, i, o.ax[2 + i], lo, hi);
        count = count ? te_mul(count, t) : t;
    }
    te_expr *div = te_const(ctx, o.dt, (double)fixed);
    if (count) div = te_cast(o.dt, fixed == 1 ? count : te_mul(count, te_int(ctx, fixed)));
    c->flops += gr_numel(o.nd, o.shape) * (gr_numel(w.sp, w.k) + 1);
    return gr_lout(c, 0, o.nd, o.ax, te_div(te_read_n(S, o.nd, o.ax), div));
}

/* GlobalAveragePool, GlobalMaxPool and their blocked twins: the spatial
 * dimensions (all but N, C and the block lane) reduced. */
static bool lower_global_pool(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    if (!gr_lin(c, 0, "X", &X) || !gr_lout_get(c, 0, &o)) return false;
    bool max = strstr(c->n->op_type, "Max") != NULL;
    int lanes = pool_lanes(c);
    bool mask[TE_MAX_DIMS] = {false};
    for (int d = 2; d < o.nd - lanes; d++) mask[d] = true;
    if (o.nd - lanes <= 2) return gr_lout(c, 0, o.nd, o.ax, te_read_n(X, o.nd, o.ax));
    c->flops += gr_numel(o.nd, X->shape);
    if (max) {
        /* One reduction, the output's own axes outside it. */
        int64_t rshape[TE_MAX_DIMS];
        te_expr *r[TE_MAX_DIMS], *xi[TE_MAX_DIMS];
        int nr = 0;
        for (int d = 2; d < o.nd - lanes; d++) rshape[nr++] = X->shape[d];
        if (!gr_lfresh_axes(c, "r", true, nr, rshape, r)) return false;
        for (int d = 0; d < o.nd; d++) xi[d] = mask[d] ? r[d - 2] : o.ax[d];
        return gr_lout(c, 0, o.nd, o.ax, te_reduce_n(TE_REDUCE_MAX, te_read_n(X, o.nd, xi), nr, r));
    }
    red_iter it;
    if (!red_iter_init(c, o.nd, X->shape, mask, &it)) return false;
    te_tensor *S = reduce_stage(c, "sum", &it, TE_REDUCE_SUM, te_read_n(X, o.nd, it.idx));
    if (!S) return false;
    c->flops += gr_numel(o.nd, o.shape);
    te_expr *n = te_const(c->ctx, o.dt, (double)it.count);
    return gr_lout(c, 0, o.nd, o.ax, te_div(te_read_n(S, o.nd, o.ax), n));
}

/* ---------------- matrix products ---------------- */

static bool lower_gemm(gr_lctx *c)
{
    te_tensor *A, *B, *C = NULL;
    gr_loutput o;
    te_expr *pax[2], *k;
    if (!gr_lin(c, 0, "A", &A) || !gr_lin(c, 1, "B", &B) ||
        !gr_lout_get(c, 0, &o))
        return false;
    double alpha = attr_float(c, "alpha", 1.0), beta = attr_float(c, "beta", 1.0);
    if (c->n_inputs > 2 && c->tin[2] && !gr_lin(c, 2, "C", &C)) return false;
    te_tensor *ignored = beta == 0.0 ? C : NULL;
    if (ignored) C = NULL;
    bool ta = attr_int(c, "transA", 0) != 0, tb = attr_int(c, "transB", 0) != 0;
    int64_t K = A->shape[ta ? 0 : 1];
    k = te_reduce_axis(c->ctx, "k", K);
    if (!k) return gr_lfail(c, "%s", te_ctx_errmsg(c->ctx));
    bool direct = alpha == 1.0 && !C && !ignored;
    if (!direct && !gr_lfresh_axes(c, "a", false, 2, o.shape, pax)) return false;
    te_expr *const *px = direct ? o.ax : pax;
    te_expr *a = ta ? te_read(A, k, px[0]) : te_read(A, px[0], k);
    te_expr *b = tb ? te_read(B, px[1], k) : te_read(B, k, px[1]);
    te_expr *sum = te_sum(te_mul(a, b), k);
    c->flops += 2.0 * (double)(o.shape[0] * o.shape[1] * K);
    if (direct) return gr_lout(c, 0, 2, o.ax, sum);
    te_tensor *P = gr_lstage(c, "mm", 2, pax, sum);
    if (!P) return false;
    te_expr *y = te_read(P, o.ax[0], o.ax[1]);
    if (alpha != 1.0) y = te_mul(y, te_const(c->ctx, o.dt, alpha));
    if (C) {
        te_expr *cv = gr_read_bcast(C, gr_lin_rank(c, 2), 2, o.ax);
        if (beta != 1.0) cv = te_mul(cv, te_const(c->ctx, o.dt, beta));
        y = te_add(y, cv);
    }
    c->flops += 3.0 * (double)(o.shape[0] * o.shape[1]);
    return gr_lout(c, 0, 2, o.ax, keep_input(y, ignored, o.ax[0]));
}

static bool lower_matmul(gr_lctx *c)
{
    te_tensor *A, *B;
    gr_loutput o;
    te_expr *ai[TE_MAX_DIMS], *bi[TE_MAX_DIMS];
    if (!gr_lin(c, 0, "A", &A) || !gr_lin(c, 1, "B", &B) ||
        !gr_lout_get(c, 0, &o))
        return false;
    int ra = gr_lin_rank(c, 0), rb = gr_lin_rank(c, 1);
    int64_t K = A->shape[ra - 1];
    te_expr *k = te_reduce_axis(c->ctx, "k", K);
    if (!k) return gr_lfail(c, "%s", te_ctx_errmsg(c->ctx));
    /* The output is batch..., then i when A is a matrix, then j when B is;
     * a vector output of rank 0 is te's [1] (no axis of its own). */
    int nb = c->tout[0]->ndim - (ra > 1) - (rb > 1);
    te_expr *i = ra > 1 ? o.ax[nb] : NULL, *j = rb > 1 ? o.ax[nb + (ra > 1)] : NULL;
    for (int d = 0; d < ra - 2; d++) {
        int od = nb - (ra - 2) + d;
        ai[d] = A->shape[d] == 1 ? te_int(c->ctx, 0) : o.ax[od];
    }
    for (int d = 0; d < rb - 2; d++) {
        int od = nb - (rb - 2) + d;
        bi[d] = B->shape[d] == 1 ? te_int(c->ctx, 0) : o.ax[od];
    }
    if (ra == 1) {
        ai[0] = k;
    } else {
        ai[ra - 2] = i;
        ai[ra - 1] = k;
    }
    if (rb == 1) {
        bi[0] = k;
    } else {
        bi[rb - 2] = k;
        bi[rb - 1] = j;
    }
    c->flops += 2.0 * gr_numel(o.nd, o.shape) * (double)K;
    te_expr *sum = te_sum(te_mul(te_read_n(A, ra, ai), te_read_n(B, rb, bi)), k);
    return gr_lout(c, 0, o.nd, o.ax, sum);
}

/* ---------------- normalizations ---------------- */

/* Statistics of X over the dimensions `mask` marks, computed in type
 * st: two reductions (sum, then the sum of squared deviations from the
 * mean), keepdims shape; mean and variance are those times 1/count. */
typedef struct {
    te_tensor *sum, *dev;
    te_expr *inv; /* 1/count, of type st */
    const bool *mask;
} moments;

static bool moments_of(gr_lctx *c, te_tensor *X, const bool *mask, te_dtype st, moments *m)
{
    int nd = X->ndim;
    red_iter a, b;
    if (!red_iter_init(c, nd, X->shape, mask, &a)) return false;
    te_expr *x = te_cast(st, te_read_n(X, nd, a.idx));
    m->sum = reduce_stage(c, "sum", &a, TE_REDUCE_SUM, x);
    if (!m->sum || !red_iter_init(c, nd, X->shape, mask, &b)) return false;
    m->inv = te_const(c->ctx, st, 1.0 / (double)a.count);
    m->mask = mask;
    te_expr *dx = te_sub(te_cast(st, te_read_n(X, nd, b.idx)),
                         te_mul(read_stat(m->sum, mask, b.idx), m->inv));
    m->dev = reduce_stage(c, "dev", &b, TE_REDUCE_SUM, te_mul(dx, dx));
    c->flops += 4.0 * gr_numel(nd, X->shape);
    return m->dev != NULL;
}

/* The mean and the variance at axes `at` of the full tensor's rank. */
static te_expr *moments_mean(const moments *m, te_expr *const *at)
{
    return te_mul(read_stat(m->sum, m->mask, at), m->inv);
}

static te_expr *moments_var(const moments *m, te_expr *const *at)
{
    return te_mul(read_stat(m->dev, m->mask, at), m->inv);
}

/* Training outputs: running = input * momentum + batch * (1 - momentum). */
static bool bn_running(gr_lctx *c, int k, te_tensor *in, te_tensor *stat, double scale,
                       double momentum)
{
    gr_loutput o;
    te_expr *si[TE_MAX_DIMS];
    if (k >= c->n_outputs || !c->tout[k]) return true;
    if (!gr_lout_get(c, k, &o)) return false;
    for (int d = 0; d < stat->ndim; d++) si[d] = d == 1 ? o.ax[0] : te_int(c->ctx, 0);
    te_expr *batch = te_mul(te_read_n(stat, stat->ndim, si), te_const(c->ctx, o.dt, scale));
    te_expr *e = te_add(te_mul(te_read(in, o.ax[0]), te_const(c->ctx, o.dt, momentum)),
                        te_mul(batch, te_const(c->ctx, o.dt, 1.0 - momentum)));
    c->flops += 4.0 * (double)o.shape[0];
    return gr_lout(c, k, o.nd, o.ax, e);
}

static bool lower_batchnorm(gr_lctx *c)
{
    te_tensor *X, *S, *Bb, *M = NULL, *V = NULL;
    gr_loutput o;
    bool training = c->opset >= 14 && attr_int(c, "training_mode", 0) != 0;
    if (!training)
        for (int k = 1; k < c->n_outputs; k++)
            if (c->tout[k])
                return gr_lfail(c, "output %d (a training statistic) is requested but "
                                   "attribute 'training_mode' is not 1 (Loom computes training "
                                   "statistics from opset 14 on)",
                                k);
    if (!gr_lin(c, 0, "X", &X) || !gr_lin(c, 1, "scale", &S) || !gr_lin(c, 2, "B", &Bb) ||
        !gr_lin(c, 3, "input_mean", &M) || !gr_lin(c, 4, "input_var", &V) ||
        !gr_lout_get(c, 0, &o))
        return false;
    te_ctx *ctx = c->ctx;
    double eps = attr_float(c, "epsilon", 1e-5);
    te_expr *ch = o.ax[1], *mean, *var;
    moments mo = {0};
    bool mask[TE_MAX_DIMS];
    int64_t count = 1;
    if (training) {
        for (int d = 0; d < o.nd; d++) mask[d] = d != 1;
        if (!moments_of(c, X, mask, o.dt, &mo)) return false;
        mean = moments_mean(&mo, o.ax);
        var = moments_var(&mo, o.ax);
        count = numel(o.nd, X->shape) / o.shape[1];
    } else {
        mean = te_read(M, ch);
        var = te_read(V, ch);
    }
    te_expr *a = te_div(te_read(S, ch), te_sqrt(te_add(var, te_const(ctx, o.dt, eps))));
    te_expr *y = te_add(te_mul(te_sub(te_read_n(X, o.nd, o.ax), mean), a), te_read(Bb, ch));
    c->flops += 4.0 * gr_numel(o.nd, o.shape);
    if (training && (c->n_outputs < 2 || !c->tout[1])) y = keep_input(y, M, o.ax[0]);
    if (training && (c->n_outputs < 3 || !c->tout[2])) y = keep_input(y, V, o.ax[0]);
    if (!gr_lout(c, 0, o.nd, o.ax, y)) return false;
    if (!training) return true;
    double momentum = attr_float(c, "momentum", 0.9), inv = 1.0 / (double)count;
    return bn_running(c, 1, M, mo.sum, inv, momentum) && bn_running(c, 2, V, mo.dev, inv, momentum);
}

/* InstanceNormalization: each (n, c) plane normalized over its spatial
 * dimensions, then scale[c] x + B[c]. */
static bool lower_instancenorm(gr_lctx *c)
{
    te_tensor *X, *Sc, *Bb;
    gr_loutput o;
    if (!gr_lin(c, 0, "input", &X) || !gr_lin(c, 1, "scale", &Sc) || !gr_lin(c, 2, "B", &Bb) ||
        !gr_lout_get(c, 0, &o))
        return false;
    if (!te_dtype_is_float(o.dt))
        return gr_lfail(c, "input has element type %s (InstanceNormalization needs floats)",
                        te_dtype_str(o.dt));
    bool mask[TE_MAX_DIMS];
    for (int d = 0; d < o.nd; d++) mask[d] = d >= 2;
    moments mo;
    if (!moments_of(c, X, mask, o.dt, &mo)) return false;
    te_ctx *ctx = c->ctx;
    te_expr *eps = te_const(ctx, o.dt, attr_float(c, "epsilon", 1e-5));
    te_expr *xn = te_div(te_sub(te_read_n(X, o.nd, o.ax), moments_mean(&mo, o.ax)),
                         te_sqrt(te_add(moments_var(&mo, o.ax), eps)));
    c->flops += 6.0 * gr_numel(o.nd, o.shape);
    return gr_lout(c, 0, o.nd, o.ax,
                   te_add(te_mul(xn, te_read(Sc, o.ax[1])), te_read(Bb, o.ax[1])));
}

static bool lower_layernorm(gr_lctx *c)
{
    te_tensor *X, *Sc, *Bb = NULL;
    gr_loutput o;
    te_dtype st;
    if (!gr_lin(c, 0, "X", &X) || !gr_lin(c, 1, "Scale", &Sc)) return false;
    if (c->n_inputs > 2 && c->tin[2] && !gr_lin(c, 2, "B", &Bb)) return false;
    if (!gr_lout_get(c, 0, &o)) return false;
    int stash = (int)attr_int(c, "stash_type", GR_FLOAT);
    if (!gr_te_dtype(stash, &st) || !te_dtype_is_float(st))
        return gr_lfail(c, "attribute 'stash_type' is %d (%s): Loom computes the statistics in "
                           "float or double only",
                        stash, gr_elem_type_name(stash));
    int rank = gr_lin_rank(c, 0);
    int64_t axis = attr_int(c, "axis", -1);
    if (axis < 0) axis += rank;
    bool mask[TE_MAX_DIMS];
    for (int d = 0; d < o.nd; d++) mask[d] = d >= axis;
    te_ctx *ctx = c->ctx;
    moments mo;
    if (!moments_of(c, X, mask, st, &mo)) return false;
    te_expr *eps = te_const(ctx, st, attr_float(c, "epsilon", 1e-5)), *one = te_const(ctx, st, 1.0);
    te_expr *xn = te_mul(te_sub(te_cast(st, te_read_n(X, o.nd, o.ax)), moments_mean(&mo, o.ax)),
                         te_div(one, te_sqrt(te_add(moments_var(&mo, o.ax), eps))));
    te_expr *y = te_mul(te_cast(o.dt, xn), gr_read_bcast(Sc, gr_lin_rank(c, 1), o.nd, o.ax));
    if (Bb) y = te_add(y, gr_read_bcast(Bb, gr_lin_rank(c, 2), o.nd, o.ax));
    c->flops += 7.0 * gr_numel(o.nd, o.shape);
    if (!gr_lout(c, 0, o.nd, o.ax, y)) return false;
    /* Mean and InvStdDev when asked for: the statistics at their own axes. */
    for (int k = 1; k < 3 && k < c->n_outputs; k++) {
        gr_loutput stat;
        if (!c->tout[k]) continue;
        if (!gr_lout_get(c, k, &stat)) return false;
        te_expr *v = k == 1 ? moments_mean(&mo, stat.ax)
                            : te_div(one, te_sqrt(te_add(moments_var(&mo, stat.ax), eps)));
        if (!gr_lout(c, k, stat.nd, stat.ax, te_cast(stat.dt, v))) return false;
    }
    return true;
}

/* ---------------- softmax ---------------- */

static bool lower_softmax(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    te_expr *eax[TE_MAX_DIMS];
    if (!gr_lin(c, 0, "input", &X) || !gr_lout_get(c, 0, &o)) return false;
    if (!te_dtype_is_float(o.dt))
        return gr_lfail(c, "input has element type %s (Softmax needs floats)", te_dtype_str(o.dt));
    int rank = gr_lin_rank(c, 0) > 0 ? gr_lin_rank(c, 0) : 1;
    int64_t axis = attr_int(c, "axis", c->opset >= 13 ? -1 : 1);
    if (axis < 0) axis += rank;
    /* Before opset 13 the input is a matrix of the dimensions before and
     * from `axis`; from 13 on, softmax runs along `axis` alone. */
    bool mask[TE_MAX_DIMS];
    for (int d = 0; d < o.nd; d++) mask[d] = c->opset >= 13 ? d == axis : d >= axis;
    red_iter a, b;
    if (!red_iter_init(c, o.nd, X->shape, mask, &a)) return false;
    te_tensor *M = reduce_stage(c, "max", &a, TE_REDUCE_MAX, te_read_n(X, o.nd, a.idx));
    if (!M || !gr_lfresh_axes(c, "e", false, o.nd, o.shape, eax)) return false;
    /* exp(x - max) <= 1: no overflow for large inputs. */
    te_tensor *E =
        gr_lstage(c, "exp", o.nd, eax, te_exp(te_sub(te_read_n(X, o.nd, eax), read_stat(M, mask, eax))));
    if (!E || !red_iter_init(c, o.nd, X->shape, mask, &b)) return false;
    te_tensor *S = reduce_stage(c, "sum", &b, TE_REDUCE_SUM, te_read_n(E, o.nd, b.idx));
    if (!S) return false;
    c->flops += 5.0 * gr_numel(o.nd, o.shape);
    if (strcmp(c->n->op_type, "LogSoftmax") == 0) {
        /* (x - max) - log(sum): no log of an underflowed exp. */
        c->flops += 2.0 * gr_numel(o.nd, o.shape);
        te_expr *shifted = te_sub(te_read_n(X, o.nd, o.ax), read_stat(M, mask, o.ax));
        return gr_lout(c, 0, o.nd, o.ax, te_sub(shifted, te_log(read_stat(S, mask, o.ax))));
    }
    /* exp times the sum's reciprocal, as ONNX Runtime's kernel computes
     * it: the reciprocal is one division a row, hoisted out of the row's
     * vector loop, where a division an element held a row of 197 at a
     * vdivps per 8 lanes (within 1 ulp of exp / sum). */
    te_expr *inv = te_div(te_const(c->ctx, o.dt, 1.0), read_stat(S, mask, o.ax));
    return gr_lout(c, 0, o.nd, o.ax, te_mul(te_read_n(E, o.nd, o.ax), inv));
}

/* Hardmax: 1 at the first maximum along `axis` (before opset 13: of each
 * row of the matrix the dimensions from `axis` on flatten to), 0
 * elsewhere. The first maximum is the smallest row-major position within
 * the reduced dimensions that holds the maximum. */
static bool lower_hardmax(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    if (!gr_lin(c, 0, "input", &X) || !gr_lout_get(c, 0, &o)) return false;
    int rank = gr_lin_rank(c, 0) > 0 ? gr_lin_rank(c, 0) : 1;
    int64_t axis = attr_int(c, "axis", c->opset >= 13 ? -1 : 1);
    if (axis < 0) axis += rank;
    bool mask[TE_MAX_DIMS];
    for (int d = 0; d < o.nd; d++) mask[d] = c->opset >= 13 ? d == axis : d >= axis;
    te_ctx *ctx = c->ctx;
    red_iter a, b;
    if (!red_iter_init(c, o.nd, X->shape, mask, &a)) return false;
    te_tensor *M = reduce_stage(c, "max", &a, TE_REDUCE_MAX, te_read_n(X, o.nd, a.idx));
    if (!M || !red_iter_init(c, o.nd, X->shape, mask, &b)) return false;
    /* The row-major position of an index within the reduced dimensions. */
    te_expr *pos_b = te_int(ctx, 0), *pos_o = te_int(ctx, 0);
    for (int d = 0; d < o.nd; d++) {
        if (!mask[d]) continue;
        pos_b = te_add(te_mul(pos_b, te_int(ctx, X->shape[d])), b.idx[d]);
        pos_o = te_add(te_mul(pos_o, te_int(ctx, X->shape[d])), o.ax[d]);
    }
    te_expr *hit = te_eq(te_read_n(X, o.nd, b.idx), read_stat(M, mask, b.idx));
    te_tensor *F = reduce_stage(c, "first", &b, TE_REDUCE_MIN,
                                te_select(hit, pos_b, te_int(ctx, b.count)));
    if (!F) return false;
    c->flops += 2.0 * gr_numel(o.nd, o.shape);
    te_expr *y = te_select(te_eq(pos_o, read_stat(F, mask, o.ax)), te_const(ctx, o.dt, 1), te_const(ctx, o.dt, 0));
    return gr_lout(c, 0, o.nd, o.ax, y);
}

const gr_lower_rule gr_lower_rules_nn[] = {
    {"", "Conv", lower_conv, 0, 0},
    {"", "ConvInteger", lower_conv, 0, 0},
    {"", "QLinearConv", lower_conv, 0, 0},
    {"", "Gemm", lower_gemm, 0, 0},
    {"", "MatMul", lower_matmul, 0, 0},
    {"", "BatchNormalization", lower_batchnorm, 0, 0},
    {"", "MaxPool", lower_maxpool, 0, 0},
    {"", "AveragePool", lower_avgpool, 0, 0},
    {"", "GlobalAveragePool", lower_global_pool, 0, 0},
    {"", "GlobalMaxPool", lower_global_pool, 0, 0},
    {"loom", "MaxPoolNCHWc", lower_maxpool, 0, 0},
    {"loom", "AveragePoolNCHWc", lower_avgpool, 0, 0},
    {"loom", "GlobalAveragePoolNCHWc", lower_global_pool, 0, 0},
    {"loom", "GlobalMaxPoolNCHWc", lower_global_pool, 0, 0},
    {"", "Softmax", lower_softmax, 0, 0},
    {"", "LogSoftmax", lower_softmax, 0, 0},
    {"", "Hardmax", lower_hardmax, 0, 0},
    {"", "InstanceNormalization", lower_instancenorm, 0, 0},
    {"", "LayerNormalization", lower_layernorm, 0, 0},
    {0},
};
