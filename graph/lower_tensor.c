/* graph/lower_tensor.c — shape and layout operators: Flatten, Reshape,
 * Transpose, Concat, Split, Slice, Gather, GatherElements, Squeeze,
 * Unsqueeze, Identity, ConstantOfShape.
 *
 * They move elements and compute nothing: their FLOP count is 0. Output
 * shapes come from inference (c->tout), so the rules only map each output
 * index to the input index it copies; the attributes and static inputs
 * they read were already checked there. */
#include "graph/infer_internal.h"
#include "graph/lower.h"

#include <inttypes.h>
#include <string.h>

static int64_t attr_int(const gr_node *n, const char *name, int64_t dflt)
{
    const gr_attr *a = gr_node_attr(n, name);
    return a && a->kind == GR_ATTR_INT ? a->i : dflt;
}

static int norm_axis(int64_t axis, int rank) { return (int)(axis < 0 ? axis + rank : axis); }

/* The contents of static input k as integers (inference read them the
 * same way, so only a missing input fails here). */
static bool static_ints(gr_lctx *c, int k, const char *what, int64_t *out, int max, int *n)
{
    const gr_tensor *t = k < c->n_inputs ? c->cin[k] : NULL;
    if (!gr_tensor_ints(t, out, max, n))
        return gr_lfail(c, "input %d (%s) is not a known list of at most %d integers", k, what, max);
    return true;
}

/* ---------------- element order kept: Reshape, Flatten, Squeeze,
 * Unsqueeze, Identity ---------------- */

/* out[i] = X[j] where j has the row-major position of i: the output's
 * axes folded into one linear index, unfolded into X's dimensions. */
static bool lower_reshape(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    if (!gr_lin(c, 0, "data", &X) || !gr_lout_get(c, 0, &o)) return false;
    te_expr *idx[TE_MAX_DIMS];
    bool same = X->ndim == o.nd;
    for (int d = 0; same && d < o.nd; d++) same = X->shape[d] == o.shape[d];
    if (same) return gr_lout(c, 0, o.nd, o.ax, te_read_n(X, o.nd, o.ax));
    te_expr *lin = te_int(c->ctx, 0);
    for (int d = 0; d < o.nd; d++)
        if (o.shape[d] > 1) lin = te_add(te_mul(lin, te_int(c->ctx, o.shape[d])), o.ax[d]);
    int64_t stride = 1;
    for (int d = X->ndim - 1; d >= 0; d--) {
        if (X->shape[d] == 1) {
            idx[d] = te_int(c->ctx, 0);
            continue;
        }
        te_expr *q = stride == 1 ? lin : te_floordiv(lin, te_int(c->ctx, stride));
        idx[d] = d == 0 ? q : te_floormod(q, te_int(c->ctx, X->shape[d]));
        stride *= X->shape[d];
    }
    return gr_lout(c, 0, o.nd, o.ax, te_read_n(X, X->ndim, idx));
}

/* ---------------- Transpose ---------------- */

static bool lower_transpose(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    if (!gr_lin(c, 0, "data", &X) || !gr_lout_get(c, 0, &o)) return false;
    int r = gr_lin_rank(c, 0);
    if (r == 0) return gr_lout(c, 0, o.nd, o.ax, te_read_n(X, 1, o.ax));
    const gr_attr *pa = gr_node_attr(c->n, "perm");
    te_expr *idx[TE_MAX_DIMS];
    for (int k = 0; k < r; k++) {
        int64_t p = pa && pa->kind == GR_ATTR_INTS && (int)pa->n == r ? pa->ints[k] : r - 1 - k;
        idx[p] = o.ax[k];
    }
    return gr_lout(c, 0, o.nd, o.ax, te_read_n(X, r, idx));
}

/* ---------------- Concat, Split, Slice ---------------- */

/* X read at the output's axes, with dimension `axis` replaced by e. */
static te_expr *read_at_axis(te_tensor *X, const gr_loutput *o, int axis, te_expr *e)
{
    te_expr *idx[TE_MAX_DIMS];
    for (int d = 0; d < X->ndim; d++) idx[d] = d == axis ? e : o->ax[d];
    return te_read_n(X, X->ndim, idx);
}

/* Concat: a chain of selects on the concatenation axis. Both sides of a
 * select are evaluated, so each input's index is clamped into its own
 * extent; the value read outside its range is discarded. Inputs of extent
 * 0 on the axis contribute nothing (and have no te form). */
static bool lower_concat(gr_lctx *c)
{
    gr_loutput o;
    if (!gr_lout_get(c, 0, &o)) return false;
    int r = gr_lin_rank(c, 0);
    if (r == 0) return gr_lfail(c, "input 0 is a scalar; Concat needs rank >= 1");
    /* Concat-1 (opsets 1-3): axis 1 by default. */
    int axis = norm_axis(attr_int(c->n, "axis", c->opset < 4 ? 1 : 0), r);
    te_expr *a = o.ax[axis], *body = NULL;
    int64_t end = o.shape[axis];
    /* Built from the last input back, so that each select tests `a < end
     * of this input` and falls through to the later ones. */
    for (int k = c->n_inputs - 1; k >= 0; k--) {
        if (!c->tin[k]) continue;
        int64_t len = c->tin[k]->shape[axis];
        if (len == 0) continue;
        end -= len;
        te_tensor *X;
        if (!gr_lin(c, k, "inputs", &X)) return false;
        te_expr *i = te_sub(a, te_int(c->ctx, end));
        if (body) i = te_min(i, te_int(c->ctx, len - 1));
        if (end > 0) i = te_max(i, te_int(c->ctx, 0));
        te_expr *v = read_at_axis(X, &o, axis, i);
        body = body ? te_select(te_lt(a, te_int(c->ctx, end + len)), v, body) : v;
    }
    if (!body) return gr_lfail(c, "has no inputs");
    return gr_lout(c, 0, o.nd, o.ax, body);
}

/* The sizes of Split's outputs along the axis, as inference computed
 * them (from the static input, the attribute, num_outputs or equal
 * parts); needed for outputs the node leaves out too. */
static bool split_sizes(gr_lctx *c, int64_t dim, int64_t *split)
{
    int nout = c->n_outputs, n = 0;
    if (c->opset >= 13 && c->n_inputs > 1 && c->tin[1])
        return static_ints(c, 1, "split", split, nout, &n);
    const gr_attr *sa = gr_node_attr(c->n, "split");
    if (c->opset < 13 && sa && sa->kind == GR_ATTR_INTS && (int)sa->n == nout) {
        memcpy(split, sa->ints, (size_t)nout * sizeof *split);
        return true;
    }
    int64_t chunk = c->opset >= 18 ? (dim + nout - 1) / nout : dim / nout;
    for (int k = 0; k < nout; k++) {
        int64_t left = dim - chunk * k;
        split[k] = left < 0 ? 0 : left < chunk ? left : chunk;
    }
    return true;
}

static bool lower_split(gr_lctx *c)
{
    te_tensor *X;
    if (!gr_lin(c, 0, "input", &X)) return false;
    int r = gr_lin_rank(c, 0);
    int axis = norm_axis(attr_int(c->n, "axis", 0), r);
    int64_t split[64], off = 0;
    if (!split_sizes(c, c->tin[0]->shape[axis], split)) return false;
    for (int k = 0; k < c->n_outputs; off += split[k++]) {
        if (!c->tout[k]) continue;
        gr_loutput o;
        if (!gr_lout_get(c, k, &o)) return false;
        te_expr *i = off ? te_add(o.ax[axis], te_int(c->ctx, off)) : o.ax[axis];
        if (!gr_lout(c, k, o.nd, o.ax, read_at_axis(X, &o, axis, i))) return false;
    }
    return true;
}

/* Slice: out[.., a, ..] = X[.., start + a * step, ..] on each sliced
 * axis, start clamped as inference clamps it (negative steps included). */
static bool lower_slice(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    if (!gr_lin(c, 0, "data", &X) || !gr_lout_get(c, 0, &o)) return false;
    int64_t starts[GR_MAX_DIMS], ends[GR_MAX_DIMS], axes[GR_MAX_DIMS], steps[GR_MAX_DIMS];
    int ns, ne, n;
    bool have_axes, have_steps;
    if (c->opset < 10) {
        /* Slice-1: attributes, as inference checked them. */
        const gr_attr *sa = gr_node_attr(c->n, "starts"), *aa = gr_node_attr(c->n, "axes");
        if (!sa || sa->kind != GR_ATTR_INTS || sa->n > GR_MAX_DIMS)
            return gr_lfail(c, "attribute 'starts' is not a list of at most %d ints", GR_MAX_DIMS);
        ns = (int)sa->n;
        if (ns) memcpy(starts, sa->ints, sa->n * sizeof *starts);
        have_axes = aa && aa->kind == GR_ATTR_INTS && (int)aa->n == ns;
        if (have_axes && ns) memcpy(axes, aa->ints, aa->n * sizeof *axes);
        have_steps = false;
    } else {
        if (!static_ints(c, 1, "starts", starts, GR_MAX_DIMS, &ns) ||
            !static_ints(c, 2, "ends", ends, GR_MAX_DIMS, &ne))
            return false;
        have_axes = c->n_inputs > 3 && c->tin[3];
        have_steps = c->n_inputs > 4 && c->tin[4];
        if (have_axes && !static_ints(c, 3, "axes", axes, GR_MAX_DIMS, &n)) return false;
        if (have_steps && !static_ints(c, 4, "steps", steps, GR_MAX_DIMS, &n)) return false;
    }
    int r = gr_lin_rank(c, 0);
    te_expr *idx[TE_MAX_DIMS];
    for (int d = 0; d < X->ndim; d++) idx[d] = o.ax[d];
    for (int i = 0; i < ns; i++) {
        int ax = norm_axis(have_axes ? axes[i] : i, r);
        int64_t d = X->shape[ax], st = have_steps ? steps[i] : 1, b = starts[i];
        if (b < 0) b = b < -d ? -1 : b + d;
        b = st > 0 ? (b < 0 ? 0 : b > d ? d : b) : (b < 0 ? 0 : b > d - 1 ? d - 1 : b);
        idx[ax] = te_add(te_mul(o.ax[ax], te_int(c->ctx, st)), te_int(c->ctx, b));
    }
    return gr_lout(c, 0, o.nd, o.ax, te_read_n(X, X->ndim, idx));
}

/* ---------------- Gather ---------------- */

/* out[p.., j.., q..] = X[p.., I[j..], q..]. The index is read at run time:
 * negative values count from the end (index + extent), and values still
 * outside [0, extent), which ONNX leaves undefined, are clamped into it so
 * that no read leaves X's buffer. */
static bool lower_gather(gr_lctx *c)
{
    te_tensor *X, *I;
    gr_loutput o;
    if (!gr_lin(c, 0, "data", &X) || !gr_lin(c, 1, "indices", &I) || !gr_lout_get(c, 0, &o))
        return false;
    int r = gr_lin_rank(c, 0), q = gr_lin_rank(c, 1);
    if (r == 0) return gr_lfail(c, "input data is a scalar; Gather needs rank >= 1");
    int axis = norm_axis(attr_int(c->n, "axis", 0), r);
    te_expr *iidx[TE_MAX_DIMS], *xidx[TE_MAX_DIMS];
    for (int k = 0; k < q; k++) iidx[k] = o.ax[axis + k];
    if (q == 0) iidx[0] = te_int(c->ctx, 0);
    te_expr *j = te_cast(TE_INT64, te_read_n(I, q ? q : 1, iidx));
    int64_t d = X->shape[axis];
    j = te_select(te_lt(j, te_int(c->ctx, 0)), te_add(j, te_int(c->ctx, d)), j);
    j = te_max(te_min(j, te_int(c->ctx, d - 1)), te_int(c->ctx, 0));
    for (int k = 0; k < r; k++)
        xidx[k] = k < axis ? o.ax[k] : k == axis ? j : o.ax[k - 1 + q];
    return gr_lout(c, 0, o.nd, o.ax, te_read_n(X, r, xidx));
}

/* GatherElements: out[i] = data[i with i[axis] = indices[i]]. An index
 * out of range, which ONNX makes an error, is clamped into the
 * dimension (as Gather's): a read never leaves data. */
static bool lower_gather_elements(gr_lctx *c)
{
    te_tensor *X, *I;
    gr_loutput o;
    if (!gr_lin(c, 0, "data", &X) || !gr_lin(c, 1, "indices", &I) || !gr_lout_get(c, 0, &o))
        return false;
    int r = gr_lin_rank(c, 0);
    int axis = norm_axis(attr_int(c->n, "axis", 0), r);
    te_expr *j = te_cast(TE_INT64, te_read_n(I, r, o.ax));
    int64_t d = X->shape[axis];
    j = te_select(te_lt(j, te_int(c->ctx, 0)), te_add(j, te_int(c->ctx, d)), j);
    j = te_max(te_min(j, te_int(c->ctx, d - 1)), te_int(c->ctx, 0));
    te_expr *xidx[TE_MAX_DIMS];
    for (int k = 0; k < r; k++) xidx[k] = k == axis ? j : o.ax[k];
    return gr_lout(c, 0, o.nd, o.ax, te_read_n(X, r, xidx));
}

/* ---------------- ConstantOfShape ---------------- */

/* Element 0 of a tensor as an immediate of type dt (integers exactly). */
static te_expr *tensor_scalar(te_ctx *ctx, const gr_tensor *t, te_dtype dt)
{
    if (!t) return te_const(ctx, dt, 0);
    const void *p = t->data;
    switch (t->elem_type) {
    case GR_FLOAT: { float v; memcpy(&v, p, 4); return te_const(ctx, dt, v); }
    case GR_DOUBLE: { double v; memcpy(&v, p, 8); return te_const(ctx, dt, v); }
    case GR_INT8: return te_int_t(ctx, dt, *(const int8_t *)p);
    case GR_UINT8: return te_int_t(ctx, dt, *(const uint8_t *)p);
    case GR_BOOL: return te_int_t(ctx, dt, *(const uint8_t *)p != 0);
    case GR_INT16: { int16_t v; memcpy(&v, p, 2); return te_int_t(ctx, dt, v); }
    case GR_UINT16: { uint16_t v; memcpy(&v, p, 2); return te_int_t(ctx, dt, v); }
    case GR_INT32: { int32_t v; memcpy(&v, p, 4); return te_int_t(ctx, dt, v); }
    case GR_UINT32: { uint32_t v; memcpy(&v, p, 4); return te_int_t(ctx, dt, v); }
    case GR_INT64:
    case GR_UINT64: { int64_t v; memcpy(&v, p, 8); return te_int_t(ctx, dt, v); }
    default: return NULL;
    }
}

/* Run only when inference did not fold the output (it folds small ones). */
static bool lower_constant_of_shape(gr_lctx *c)
{
    gr_loutput o;
    if (!gr_lout_get(c, 0, &o)) return false;
    const gr_attr *v = gr_node_attr(c->n, "value");
    te_expr *val = tensor_scalar(c->ctx, v && v->kind == GR_ATTR_TENSOR ? v->t : NULL, o.dt);
    if (!val) return gr_lfail(c, "attribute 'value' has a type Loom cannot compute");
    return gr_lout(c, 0, o.nd, o.ax, val);
}

const gr_lower_rule gr_lower_rules_tensor[] = {
    {"", "Flatten", lower_reshape, 0, 0},
    {"", "Reshape", lower_reshape, 1u << 1, 0},
    {"", "Squeeze", lower_reshape, 1u << 1, 13},
    {"", "Unsqueeze", lower_reshape, 1u << 1, 13},
    {"", "Identity", lower_reshape, 0, 0},
    {"", "Transpose", lower_transpose, 0, 0},
    {"", "Concat", lower_concat, 0, 0},
    {"", "Split", lower_split, 1u << 1, 13},
    {"", "Slice", lower_slice, 0x1eu, 10},
    {"", "Gather", lower_gather, 0, 0},
    {"", "GatherElements", lower_gather_elements, 0, 0},
    {"", "ConstantOfShape", lower_constant_of_shape, 1u << 0, 0},
    {0},
};
