/* graph/infer_movement.c — shape inference of the operators that move or
 * select elements by position (Expand, Tile, Pad, DepthToSpace,
 * SpaceToDepth, Trilu, CumSum), build them from scalars (Range), or count
 * them (Size, whose value inference knows and folds). The inputs that set
 * a shape (Expand's shape, Tile's repeats, Pad's pads and axes, Trilu's
 * k, CumSum's axis, Range's three) are read here and must be known
 * constants. */
#include "graph/infer_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* An INT attribute that is a flag: absent, 0 or 1. */
static bool flag_attr_ok(gr_ictx *c, const char *name)
{
    const gr_attr *a = gr_node_attr(c->n, name);
    if (a && (a->kind != GR_ATTR_INT || (a->i != 0 && a->i != 1)))
        return gr_ifail(c, "attribute '%s' must be 0 or 1", name);
    return true;
}

/* Size: the number of elements, an int64 scalar (folded). */
bool gr_infer_size(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "data", &x)) return false;
    int64_t n = 1;
    for (int d = 0; d < x->ndim; d++) n *= x->shape[d];
    if (!gr_iout(c, 0, GR_INT64, 0, NULL)) return false;
    gr_tensor *t = gr_inew_tensor(c, GR_INT64, 0, NULL);
    if (!t) return false;
    memcpy(t->data, &n, sizeof n);
    gr_iout_data(c, 0, t);
    return true;
}

/* Expand: input and `shape` broadcast together (both ways). */
bool gr_infer_expand(gr_ictx *c)
{
    const gr_type *x;
    int64_t s[GR_MAX_DIMS], out[GR_MAX_DIMS];
    int ns, n;
    if (!gr_iin_req(c, 0, "input", &x) || !gr_iin_req(c, 1, "shape", &(const gr_type *){0}) ||
        !gr_iin_ints(c, 1, "shape", s, GR_MAX_DIMS, &ns))
        return false;
    for (int i = 0; i < ns; i++)
        if (s[i] < 0) return gr_ifail(c, "input 'shape' value %d is %" PRId64 " (negative)", i, s[i]);
    if (!gr_ibroadcast(c, x->ndim, x->shape, ns, s, &n, out)) return false;
    return gr_iout(c, 0, x->elem_type, n, out);
}

/* Tile: dimension d repeated repeats[d] times. */
bool gr_infer_tile(gr_ictx *c)
{
    const gr_type *x;
    int64_t r[GR_MAX_DIMS], out[GR_MAX_DIMS];
    int nr;
    if (!gr_iin_req(c, 0, "input", &x) || !gr_iin_req(c, 1, "repeats", &(const gr_type *){0}) ||
        !gr_iin_ints(c, 1, "repeats", r, GR_MAX_DIMS, &nr))
        return false;
    if (nr != x->ndim)
        return gr_ifail(c, "input 'repeats' has %d values; input has rank %d (one each)", nr, x->ndim);
    for (int d = 0; d < nr; d++) {
        if (r[d] < 0) return gr_ifail(c, "input 'repeats' value %d is %" PRId64 " (negative)", d, r[d]);
        out[d] = x->shape[d] * r[d];
    }
    return gr_iout(c, 0, x->elem_type, x->ndim, out);
}

bool gr_pad_amounts(const gr_node *n, int64_t opset, const gr_tensor *pads_in,
                    const gr_tensor *axes_in, int rank, int64_t *begin, int64_t *end,
                    const char **why)
{
    int64_t pads[2 * GR_MAX_DIMS], axes[GR_MAX_DIMS];
    int np = 0, na = rank;
    *why = NULL;
    if (opset < 11) {
        const gr_attr *a = gr_node_attr(n, opset < 2 ? "paddings" : "pads");
        if (!a || a->kind != GR_ATTR_INTS || a->n > 2 * GR_MAX_DIMS) {
            *why = opset < 2 ? "attribute 'paddings' is missing or not a list of ints"
                             : "attribute 'pads' is missing or not a list of ints";
            return false;
        }
        np = (int)a->n;
        if (np) memcpy(pads, a->ints, (size_t)np * sizeof *pads);
    } else if (!gr_tensor_ints(pads_in, pads, 2 * GR_MAX_DIMS, &np)) {
        *why = "input 'pads' must be a known int64 tensor";
        return false;
    }
    for (int d = 0; d < rank; d++) axes[d] = d;
    if (axes_in) {
        if (!gr_tensor_ints(axes_in, axes, GR_MAX_DIMS, &na)) {
            *why = "input 'axes' must be a known int32 or int64 tensor";
            return false;
        }
    }
    if (np != 2 * na) {
        *why = "input 'pads' must hold two values (begin, end) per padded axis";
        return false;
    }
    for (int d = 0; d < rank; d++) begin[d] = end[d] = 0;
    for (int i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
        if (a < 0 || a >= rank) {
            *why = "input 'axes' names a dimension outside the input's rank";
            return false;
        }
        begin[a] = pads[i];
        end[a] = pads[i + na];
    }
    return true;
}

/* Pad: constant, reflect or edge; negative pads crop. */
bool gr_infer_pad(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "data", &x)) return false;
    const char *mode = gr_iattr_str(c, "mode", "constant");
    if (strcmp(mode, "constant") != 0 && strcmp(mode, "reflect") != 0 && strcmp(mode, "edge") != 0)
        return gr_ifail(c, "attribute 'mode' is '%s'; Loom pads with 'constant', 'reflect' or "
                           "'edge'", mode);
    if (c->opset >= 11) {
        if (!gr_iin(c, 1)) return gr_ifail(c, "input 1 (pads) is missing");
        if (!gr_iin_const(c, 1))
            return gr_ifail(c, "input 'pads' ('%s') must be a constant to infer shapes",
                            c->g->values[c->n->inputs[1]].name);
        const gr_type *v = gr_iin(c, 2);
        if (v) {
            int64_t n = 1;
            for (int d = 0; d < v->ndim; d++) n *= v->shape[d];
            if (n != 1) return gr_ifail(c, "input 'constant_value' has %" PRId64 " elements; it must be a scalar", n);
            if (v->elem_type != x->elem_type)
                return gr_ifail(c, "input 'constant_value' is %s, data is %s", gr_elem_type_name(v->elem_type),
                                gr_elem_type_name(x->elem_type));
        }
        if (gr_iin(c, 3) && !gr_iin_const(c, 3))
            return gr_ifail(c, "input 'axes' must be a constant to infer shapes");
    }
    int64_t b[GR_MAX_DIMS], e[GR_MAX_DIMS], out[GR_MAX_DIMS];
    const char *why;
    if (!gr_pad_amounts(c->n, c->opset, gr_iin_const(c, 1), c->opset >= 18 ? gr_iin_const(c, 3) : NULL,
                        x->ndim, b, e, &why))
        return gr_ifail(c, "%s", why);
    for (int d = 0; d < x->ndim; d++) {
        out[d] = x->shape[d] + b[d] + e[d];
        if (out[d] < 0)
            return gr_ifail(c, "pads %" PRId64 " and %" PRId64 " crop dimension %d (%" PRId64
                               ") below 0", b[d], e[d], d, x->shape[d]);
        if (strcmp(mode, "constant") != 0 && (b[d] > 0 || e[d] > 0) && x->shape[d] == 0)
            return gr_ifail(c, "mode '%s' pads dimension %d, which is empty", mode, d);
        if (strcmp(mode, "reflect") == 0 && (b[d] >= x->shape[d] || e[d] >= x->shape[d]))
            return gr_ifail(c, "mode 'reflect' pads dimension %d (%" PRId64 ") by %" PRId64
                               " and %" PRId64 "; each must be below the extent", d,
                            x->shape[d], b[d], e[d]);
    }
    return gr_iout(c, 0, x->elem_type, x->ndim, out);
}

/* DepthToSpace / SpaceToDepth: [N, C, H, W] and blocksize b. */
bool gr_infer_depth_space(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "input", &x)) return false;
    bool d2s = strcmp(c->n->op_type, "DepthToSpace") == 0;
    if (x->ndim != 4) return gr_ifail(c, "input has rank %d; it must be [N, C, H, W]", x->ndim);
    const gr_attr *ba = gr_node_attr(c->n, "blocksize");
    if (!ba || ba->kind != GR_ATTR_INT || ba->i < 1)
        return gr_ifail(c, "attribute 'blocksize' must be an int >= 1");
    int64_t b = ba->i, s[4];
    if (d2s) {
        const char *mode = gr_iattr_str(c, "mode", "DCR");
        if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0)
            return gr_ifail(c, "attribute 'mode' is '%s', not 'DCR' or 'CRD'", mode);
        if (x->shape[1] % (b * b))
            return gr_ifail(c, "channels %" PRId64 " are not a multiple of blocksize^2 = %" PRId64,
                            x->shape[1], b * b);
        int64_t t[4] = {x->shape[0], x->shape[1] / (b * b), x->shape[2] * b, x->shape[3] * b};
        memcpy(s, t, sizeof s);
    } else {
        if (x->shape[2] % b || x->shape[3] % b)
            return gr_ifail(c, "height %" PRId64 " and width %" PRId64 " must be multiples of "
                               "blocksize %" PRId64, x->shape[2], x->shape[3], b);
        int64_t t[4] = {x->shape[0], x->shape[1] * b * b, x->shape[2] / b, x->shape[3] / b};
        memcpy(s, t, sizeof s);
    }
    return gr_iout(c, 0, x->elem_type, 4, s);
}

/* Trilu: rank >= 2; k, when given, a known scalar. */
bool gr_infer_trilu(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "input", &x)) return false;
    if (x->ndim < 2) return gr_ifail(c, "input has rank %d; Trilu needs rank >= 2", x->ndim);
    if (!flag_attr_ok(c, "upper")) return false;
    if (gr_iin(c, 1)) {
        int64_t k;
        int n;
        if (!gr_iin_ints(c, 1, "k", &k, 1, &n)) return false;
        if (n != 1) return gr_ifail(c, "input 'k' must hold one value");
    }
    return gr_iout(c, 0, x->elem_type, x->ndim, x->shape);
}

/* CumSum: axis a known scalar in range. */
bool gr_infer_cumsum(gr_ictx *c)
{
    const gr_type *x;
    int64_t axis;
    int n, ax;
    if (!gr_iin_req(c, 0, "x", &x) || !gr_iin_req(c, 1, "axis", &(const gr_type *){0}) ||
        !gr_iin_ints(c, 1, "axis", &axis, 1, &n))
        return false;
    if (n != 1) return gr_ifail(c, "input 'axis' must hold one value");
    if (!gr_iaxis(c, axis, x->ndim, "input 'axis'", &ax)) return false;
    if (!flag_attr_ok(c, "exclusive") || !flag_attr_ok(c, "reverse")) return false;
    if (x->elem_type == GR_BOOL || !gr_elem_type_size(x->elem_type))
        return gr_ifail(c, "input x is %s; CumSum adds numbers only", gr_elem_type_name(x->elem_type));
    return gr_iout(c, 0, x->elem_type, x->ndim, x->shape);
}

/* A scalar input of Range as a double (its exact integer too). */
static bool range_scalar(gr_ictx *c, int k, const char *what, double *v, int64_t *iv)
{
    const gr_tensor *t = gr_iin_const(c, k);
    if (!gr_iin(c, k)) return gr_ifail(c, "input %d (%s) is missing", k, what);
    if (!t)
        return gr_ifail(c, "input '%s' ('%s') must be a constant (Range's length is its shape)", what,
                        c->g->values[c->n->inputs[k]].name);
    if (t->numel != 1) return gr_ifail(c, "input '%s' has %" PRId64 " elements; it must be a scalar", what, t->numel);
    *iv = 0;
    switch (t->elem_type) {
    case GR_FLOAT: { float f; memcpy(&f, t->data, 4); *v = f; break; }
    case GR_DOUBLE: memcpy(v, t->data, 8); break;
    case GR_INT16: { int16_t i; memcpy(&i, t->data, 2); *iv = i; *v = i; break; }
    case GR_INT32: { int32_t i; memcpy(&i, t->data, 4); *iv = i; *v = i; break; }
    case GR_INT64: memcpy(iv, t->data, 8); *v = (double)*iv; break;
    default:
        return gr_ifail(c, "input '%s' is %s; Range takes float, double, int16, int32 or int64",
                        what, gr_elem_type_name(t->elem_type));
    }
    return true;
}

int64_t gr_range_length(int elem_type, double start, double limit, double delta, int64_t istart,
                        int64_t ilimit, int64_t idelta)
{
    double n;
    if (elem_type == GR_FLOAT || elem_type == GR_DOUBLE)
        n = ceil((limit - start) / delta);
    else
        n = ceil((double)(ilimit - istart) / (double)idelta);
    return n > 0 ? (int64_t)n : 0;
}

/* Range: max(ceil((limit - start) / delta), 0) values of start's type. */
bool gr_infer_range(gr_ictx *c)
{
    double v[3];
    int64_t iv[3];
    const char *names[3] = {"start", "limit", "delta"};
    for (int k = 0; k < 3; k++)
        if (!range_scalar(c, k, names[k], &v[k], &iv[k])) return false;
    int t = gr_iin(c, 0)->elem_type;
    for (int k = 1; k < 3; k++)
        if (gr_iin(c, k)->elem_type != t)
            return gr_ifail(c, "inputs start (%s) and %s (%s) must have one element type",
                            gr_elem_type_name(t), names[k], gr_elem_type_name(gr_iin(c, k)->elem_type));
    if (v[2] == 0) return gr_ifail(c, "input 'delta' is 0");
    int64_t n = gr_range_length(t, v[0], v[1], v[2], iv[0], iv[1], iv[2]);
    return gr_iout(c, 0, t, 1, &n);
}
