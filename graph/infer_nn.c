/* graph/infer_nn.c — shape rules of the network operators: convolution
 * and pooling windows, matrix products, normalizations, reductions. */
#include "graph/infer_internal.h"

#include <inttypes.h>
#include <string.h>

/* ---------------- sliding windows (Conv, MaxPool, AveragePool) ---------------- */

typedef enum { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID } auto_pad;

static bool read_auto_pad(gr_ictx *c, auto_pad *out)
{
    const char *s = gr_iattr_str(c, "auto_pad", "NOTSET");
    static const char *names[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (auto_pad)i;
            return true;
        }
    return gr_ifail(c, "attribute 'auto_pad' is '%s', not NOTSET, SAME_UPPER, SAME_LOWER or VALID", s);
}

/* An INTS attribute of exactly `want` entries, each >= lo, or `dflt` for all. */
static bool window_attr(gr_ictx *c, const char *name, int want, int64_t dflt, int64_t lo,
                        int64_t *out)
{
    int n;
    bool bad;
    if (!gr_iattr_ints(c, name, out, 2 * GR_MAX_DIMS, &n, &bad)) {
        if (bad) return false;
        for (int i = 0; i < want; i++) out[i] = dflt;
        return true;
    }
    if (n != want)
        return gr_ifail(c, "attribute '%s' has %d values, the input needs %d", name, n, want);
    for (int i = 0; i < n; i++)
        if (out[i] < lo)
            return gr_ifail(c, "attribute '%s' value %d is %" PRId64 " (must be >= %" PRId64 ")",
                            name, i, out[i], lo);
    return true;
}

static int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* Output extents of the spatial dimensions: x has `sp` of them at in[],
 * the window k[] with strides s[], dilations d[], pads (begin then end). */
static bool window_out(gr_ictx *c, int sp, const int64_t *in, const int64_t *k, bool ceil_mode,
                       int64_t *out)
{
    int64_t s[GR_MAX_DIMS], d[GR_MAX_DIMS], pads[2 * GR_MAX_DIMS];
    auto_pad ap = PAD_NOTSET;
    if (!read_auto_pad(c, &ap) || !window_attr(c, "strides", sp, 1, 1, s) ||
        !window_attr(c, "dilations", sp, 1, 1, d) || !window_attr(c, "pads", 2 * sp, 0, 0, pads))
        return false;
    for (int i = 0; i < sp; i++) {
        int64_t span = (k[i] - 1) * d[i] + 1;
        int64_t o;
        if (ap == PAD_SAME_UPPER || ap == PAD_SAME_LOWER) {
            o = ceil_div(in[i], s[i]);
        } else {
            int64_t pb = ap == PAD_VALID ? 0 : pads[i], pe = ap == PAD_VALID ? 0 : pads[sp + i];
            int64_t room = in[i] + pb + pe - span;
            if (room < 0)
                return gr_ifail(c, "the window (%" PRId64 " with dilation %" PRId64
                                   ") is larger than spatial dimension %d (%" PRId64
                                   " with pads %" PRId64 "+%" PRId64 ")",
                                k[i], d[i], i, in[i], pb, pe);
            o = (ceil_mode ? ceil_div(room, s[i]) : floor_div(room, s[i])) + 1;
            /* A window that would start in the end padding is dropped. */
            if (ceil_mode && (o - 1) * s[i] >= in[i] + pb) o--;
        }
        out[i] = o;
    }
    return true;
}

bool gr_infer_conv(gr_ictx *c)
{
    const gr_type *x, *w;
    if (!gr_iin_req(c, 0, "X", &x) || !gr_iin_req(c, 1, "W", &w)) return false;
    if (x->ndim < 3) return gr_ifail(c, "input X has rank %d (needs N, C and spatial dimensions)", x->ndim);
    if (w->ndim != x->ndim)
        return gr_ifail(c, "input W has rank %d, X has rank %d", w->ndim, x->ndim);
    int sp = x->ndim - 2;
    int64_t group = gr_iattr_int(c, "group", 1);
    if (group < 1) return gr_ifail(c, "attribute 'group' is %" PRId64 " (must be >= 1)", group);
    if (x->shape[1] != w->shape[1] * group)
        return gr_ifail(c, "X has %" PRId64 " channels, W expects %" PRId64 " x group %" PRId64,
                        x->shape[1], w->shape[1], group);
    if (w->shape[0] % group != 0)
        return gr_ifail(c, "W has %" PRId64 " output channels, not a multiple of group %" PRId64,
                        w->shape[0], group);
    const gr_type *b = gr_iin(c, 2);
    if (b && (b->ndim != 1 || b->shape[0] != w->shape[0]))
        return gr_ifail(c, "input B must have shape [%" PRId64 "]", w->shape[0]);
    int64_t k[GR_MAX_DIMS], out[GR_MAX_DIMS];
    if (!window_attr(c, "kernel_shape", sp, 0, 1, k)) return false;
    for (int i = 0; i < sp; i++) {
        if (gr_node_attr(c->n, "kernel_shape") && k[i] != w->shape[2 + i])
            return gr_ifail(c, "attribute 'kernel_shape' value %d is %" PRId64 ", W has %" PRId64,
                            i, k[i], w->shape[2 + i]);
        k[i] = w->shape[2 + i];
    }
    out[0] = x->shape[0];
    out[1] = w->shape[0];
    if (!window_out(c, sp, x->shape + 2, k, false, out + 2)) return false;
    return gr_iout(c, 0, x->elem_type, x->ndim, out);
}

bool gr_infer_pool(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "X", &x)) return false;
    if (x->ndim < 3) return gr_ifail(c, "input X has rank %d (needs N, C and spatial dimensions)", x->ndim);
    int sp = x->ndim - 2;
    int64_t k[GR_MAX_DIMS], out[GR_MAX_DIMS];
    if (!gr_node_attr(c->n, "kernel_shape")) return gr_ifail(c, "attribute 'kernel_shape' is missing");
    if (!window_attr(c, "kernel_shape", sp, 0, 1, k)) return false;
    int64_t ceil_mode = gr_iattr_int(c, "ceil_mode", 0);
    if (ceil_mode != 0 && ceil_mode != 1)
        return gr_ifail(c, "attribute 'ceil_mode' is %" PRId64 " (0 or 1)", ceil_mode);
    out[0] = x->shape[0];
    out[1] = x->shape[1];
    if (!window_out(c, sp, x->shape + 2, k, ceil_mode, out + 2)) return false;
    if (!gr_iout(c, 0, x->elem_type, x->ndim, out)) return false;
    return gr_iout(c, 1, GR_INT64, x->ndim, out); /* MaxPool's Indices */
}

bool gr_infer_global_pool(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "X", &x)) return false;
    if (x->ndim < 2) return gr_ifail(c, "input X has rank %d (needs N and C)", x->ndim);
    int64_t out[GR_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) out[i] = i < 2 ? x->shape[i] : 1;
    return gr_iout(c, 0, x->elem_type, x->ndim, out);
}

/* ---------------- blocked pools (loom:*PoolNCHWc, graph/infer_layout.c) ---------------- */

/* Refuses any attribute outside `known` (a NULL-ended list): a blocked
 * pool takes only what graph/pass_alter_layout.c writes, so anything
 * else would be an attribute the lowering silently ignored. */
static bool only_attrs(gr_ictx *c, const char *const *known, const char *rule)
{
    for (int a = 0; a < c->n->n_attrs; a++) {
        bool ok = false;
        for (int k = 0; known[k] && !ok; k++) ok = strcmp(c->n->attrs[a].name, known[k]) == 0;
        if (!ok)
            return gr_ifail(c, "attribute '%s' is not taken by %s (%s)", c->n->attrs[a].name,
                            c->n->op_type, rule);
    }
    return true;
}

static bool blocked_input(gr_ictx *c, const gr_type **x)
{
    if (!gr_iin_req(c, 0, "X", x)) return false;
    if ((*x)->ndim != 5)
        return gr_ifail(c, "input X has rank %d (needs 5: N, C/b, H, W, b)", (*x)->ndim);
    return true;
}

bool gr_infer_pool_nchwc(gr_ictx *c)
{
    static const char *const max_attrs[] = {"kernel_shape", "strides", "pads", "dilations",
                                            "ceil_mode", NULL};
    static const char *const avg_attrs[] = {"kernel_shape", "strides", "pads", "dilations",
                                            "ceil_mode", "count_include_pad", NULL};
    bool avg = strcmp(c->n->op_type, "AveragePoolNCHWc") == 0;
    const gr_type *x;
    if (!blocked_input(c, &x) ||
        !only_attrs(c, avg ? avg_attrs : max_attrs,
                    avg ? "kernel_shape, strides, pads, dilations, ceil_mode, count_include_pad; "
                          "pads are explicit"
                        : "kernel_shape, strides, pads, dilations, ceil_mode; pads are explicit, "
                          "no Indices"))
        return false;
    if (c->n->n_outputs > 1) return gr_ifail(c, "has %d outputs (1: no Indices)", c->n->n_outputs);
    /* window_attr reads the whole attribute before checking its length. */
    int64_t k[2 * GR_MAX_DIMS], out[5] = {x->shape[0], x->shape[1], 0, 0, x->shape[4]};
    if (!gr_node_attr(c->n, "kernel_shape"))
        return gr_ifail(c, "attribute 'kernel_shape' is missing");
    if (!window_attr(c, "kernel_shape", 2, 0, 1, k)) return false;
    int64_t ceil_mode = gr_iattr_int(c, "ceil_mode", 0);
    int64_t incl = gr_iattr_int(c, "count_include_pad", 0);
    if (ceil_mode != 0 && ceil_mode != 1)
        return gr_ifail(c, "attribute 'ceil_mode' is %" PRId64 " (0 or 1)", ceil_mode);
    if (incl != 0 && incl != 1)
        return gr_ifail(c, "attribute 'count_include_pad' is %" PRId64 " (0 or 1)", incl);
    if (!window_out(c, 2, x->shape + 2, k, ceil_mode, out + 2)) return false;
    return gr_iout(c, 0, x->elem_type, 5, out);
}

bool gr_infer_global_pool_nchwc(gr_ictx *c)
{
    static const char *const none[] = {NULL};
    const gr_type *x;
    if (!blocked_input(c, &x) || !only_attrs(c, none, "it has none")) return false;
    int64_t out[5] = {x->shape[0], x->shape[1], 1, 1, x->shape[4]};
    return gr_iout(c, 0, x->elem_type, 5, out);
}

/* ---------------- matrix products ---------------- */

bool gr_infer_gemm(gr_ictx *c)
{
    const gr_type *a, *b;
    if (!gr_iin_req(c, 0, "A", &a) || !gr_iin_req(c, 1, "B", &b)) return false;
    if (a->ndim != 2 || b->ndim != 2)
        return gr_ifail(c, "inputs A and B must be matrices (ranks %d and %d)", a->ndim, b->ndim);
    bool ta = gr_iattr_int(c, "transA", 0) != 0, tb = gr_iattr_int(c, "transB", 0) != 0;
    int64_t m = a->shape[ta ? 1 : 0], ka = a->shape[ta ? 0 : 1];
    int64_t kb = b->shape[tb ? 1 : 0], n = b->shape[tb ? 0 : 1];
    if (ka != kb)
        return gr_ifail(c, "A gives K = %" PRId64 ", B gives K = %" PRId64 " (transA %d, transB %d)",
                        ka, kb, ta, tb);
    int64_t out[2] = {m, n};
    if (c->opset < 7 && !gr_infer_legacy_gemm(c, m, n)) return false;
    const gr_type *cc = gr_iin(c, 2);
    if (cc) {
        /* C broadcasts to [M, N] one way only. */
        int nb;
        int64_t s[GR_MAX_DIMS];
        if (cc->ndim > 2 || !gr_ibroadcast(c, 2, out, cc->ndim, cc->shape, &nb, s)) {
            if (cc->ndim > 2) return gr_ifail(c, "input C has rank %d (at most 2)", cc->ndim);
            return false;
        }
        if (s[0] != m || s[1] != n)
            return gr_ifail(c, "input C does not broadcast to [%" PRId64 ",%" PRId64 "]", m, n);
    }
    return gr_iout(c, 0, a->elem_type, 2, out);
}

bool gr_infer_matmul(gr_ictx *c)
{
    const gr_type *a, *b;
    if (!gr_iin_req(c, 0, "A", &a) || !gr_iin_req(c, 1, "B", &b)) return false;
    if (a->ndim < 1 || b->ndim < 1) return gr_ifail(c, "inputs A and B must have rank >= 1");
    /* A vector is a matrix with a 1 prepended (A) or appended (B), removed again after. */
    int64_t sa[GR_MAX_DIMS], sb[GR_MAX_DIMS];
    int na = a->ndim, nb = b->ndim;
    if (na == 1) {
        sa[0] = 1;
        sa[1] = a->shape[0];
        na = 2;
    } else {
        memcpy(sa, a->shape, (size_t)na * sizeof *sa);
    }
    if (nb == 1) {
        sb[0] = b->shape[0];
        sb[1] = 1;
        nb = 2;
    } else {
        memcpy(sb, b->shape, (size_t)nb * sizeof *sb);
    }
    if (sa[na - 1] != sb[nb - 2])
        return gr_ifail(c, "A has K = %" PRId64 ", B has K = %" PRId64, sa[na - 1], sb[nb - 2]);
    int n;
    int64_t out[GR_MAX_DIMS];
    if (!gr_ibroadcast(c, na - 2, sa, nb - 2, sb, &n, out)) return false;
    if (a->ndim > 1) out[n++] = sa[na - 2];
    if (b->ndim > 1) out[n++] = sb[nb - 1];
    return gr_iout(c, 0, a->elem_type, n, out);
}

/* ---------------- normalizations ---------------- */

bool gr_infer_batchnorm(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "X", &x)) return false;
    if (x->ndim < 2) return gr_ifail(c, "input X has rank %d (needs N and C)", x->ndim);
    if (c->opset < 9 && !gr_infer_legacy_batchnorm(c)) return false;
    static const char *params[] = {"scale", "B", "input_mean", "input_var"};
    for (int k = 1; k < 5; k++) {
        const gr_type *p;
        if (!gr_iin_req(c, k, params[k - 1], &p)) return false;
        if (p->ndim != 1 || p->shape[0] != x->shape[1])
            return gr_ifail(c, "input %s must have shape [%" PRId64 "]", params[k - 1], x->shape[1]);
    }
    if (!gr_iout(c, 0, x->elem_type, x->ndim, x->shape)) return false;
    /* Training outputs (running or saved mean and variance) are per channel. */
    for (int k = 1; k < c->n->n_outputs; k++) {
        const gr_type *p = gr_iin(c, k < 3 ? 2 + k : 3);
        if (!gr_iout(c, k, p->elem_type, 1, &x->shape[1])) return false;
    }
    return true;
}

bool gr_infer_layernorm(gr_ictx *c)
{
    const gr_type *x;
    int axis;
    if (!gr_iin_req(c, 0, "X", &x)) return false;
    if (!gr_iaxis(c, gr_iattr_int(c, "axis", -1), x->ndim, "attribute 'axis'", &axis)) return false;
    if (!gr_iout(c, 0, x->elem_type, x->ndim, x->shape)) return false;
    int64_t s[GR_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) s[i] = i < axis ? x->shape[i] : 1;
    int stash = (int)gr_iattr_int(c, "stash_type", GR_FLOAT);
    if (!gr_elem_type_size(stash))
        return gr_ifail(c, "attribute 'stash_type' is %d, not a numeric element type", stash);
    return gr_iout(c, 1, stash, x->ndim, s) && gr_iout(c, 2, stash, x->ndim, s);
}

/* ---------------- reductions ---------------- */

bool gr_infer_reduce(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "data", &x)) return false;
    /* Axes became an input for ReduceSum at opset 13 and the others at 18. */
    bool axes_input = c->opset >= (strcmp(c->n->op_type, "ReduceSum") == 0 ? 13 : 18);
    int64_t axes[GR_MAX_DIMS];
    int na = 0;
    bool bad;
    if (axes_input) {
        if (gr_iin(c, 1) && !gr_iin_ints(c, 1, "axes", axes, GR_MAX_DIMS, &na)) return false;
        if (gr_node_attr(c->n, "axes"))
            return gr_ifail(c, "attribute 'axes' is not allowed at opset %" PRId64 " (axes is an input)",
                            c->opset);
    } else {
        gr_iattr_ints(c, "axes", axes, GR_MAX_DIMS, &na, &bad);
        if (bad) return false;
    }
    bool keep = gr_iattr_int(c, "keepdims", 1) != 0;
    bool noop = axes_input && gr_iattr_int(c, "noop_with_empty_axes", 0) != 0;
    if (na == 0 && noop) return gr_iout(c, 0, x->elem_type, x->ndim, x->shape);
    bool reduced[GR_MAX_DIMS] = {false};
    for (int i = 0; i < x->ndim; i++) reduced[i] = na == 0;
    for (int i = 0; i < na; i++) {
        int ax;
        if (!gr_iaxis(c, axes[i], x->ndim, "axes value", &ax)) return false;
        if (reduced[ax]) return gr_ifail(c, "axes names dimension %d twice", ax);
        reduced[ax] = true;
    }
    int64_t s[GR_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (!reduced[i]) s[n++] = x->shape[i];
        else if (keep) s[n++] = 1;
    }
    return gr_iout(c, 0, x->elem_type, n, s);
}

/* ArgMax, ArgMin: int64 positions along `axis` (select_last_index from
 * opset 12 picks the last of equal extremes). */
bool gr_infer_argminmax(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "data", &x)) return false;
    if (x->ndim < 1) return gr_ifail(c, "input data is a scalar; it needs rank >= 1");
    if (x->elem_type == GR_BOOL || !gr_elem_type_size(x->elem_type))
        return gr_ifail(c, "input data is %s; %s is defined for numbers only",
                        gr_elem_type_name(x->elem_type), c->n->op_type);
    int axis;
    if (!gr_iaxis(c, gr_iattr_int(c, "axis", 0), x->ndim, "attribute 'axis'", &axis)) return false;
    const gr_attr *sl = gr_node_attr(c->n, "select_last_index");
    if (sl && (sl->kind != GR_ATTR_INT || (sl->i != 0 && sl->i != 1)))
        return gr_ifail(c, "attribute 'select_last_index' must be 0 or 1");
    if (sl && c->opset < 12)
        return gr_ifail(c, "attribute 'select_last_index' is not defined at opset %" PRId64
                           " (from 12 on)", c->opset);
    bool keep = gr_iattr_int(c, "keepdims", 1) != 0;
    int64_t s[GR_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (i != axis) s[n++] = x->shape[i];
        else if (keep) s[n++] = 1;
    }
    return gr_iout(c, 0, GR_INT64, n, s);
}

/* InstanceNormalization: X [N, C, D1, ...] (rank >= 3), scale and B [C]. */
bool gr_infer_instancenorm(gr_ictx *c)
{
    const gr_type *x, *s, *b;
    if (!gr_iin_req(c, 0, "input", &x) || !gr_iin_req(c, 1, "scale", &s) ||
        !gr_iin_req(c, 2, "B", &b))
        return false;
    if (x->ndim < 3)
        return gr_ifail(c, "input has rank %d; it must be [N, C, D1, ...] (rank >= 3)", x->ndim);
    const gr_type *p[2] = {s, b};
    const char *names[2] = {"scale", "B"};
    for (int k = 0; k < 2; k++) {
        if (p[k]->ndim != 1 || p[k]->shape[0] != x->shape[1])
            return gr_ifail(c, "input %s must be [C] = [%" PRId64 "]", names[k], x->shape[1]);
        if (p[k]->elem_type != x->elem_type)
            return gr_ifail(c, "input %s is %s, input is %s: they need one element type", names[k],
                            gr_elem_type_name(p[k]->elem_type), gr_elem_type_name(x->elem_type));
    }
    return gr_iout(c, 0, x->elem_type, x->ndim, x->shape);
}
