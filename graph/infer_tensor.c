/* graph/infer_tensor.c — shape rules of the layout operators (Flatten,
 * Reshape, Transpose, Concat, Split, Slice, Gather, Squeeze, Unsqueeze)
 * and of the constant makers (Shape, Constant, ConstantOfShape, Cast).
 * Where the inputs' contents are known and small, the outputs' contents
 * are computed too, so that Shape -> Gather -> Concat -> Reshape chains
 * give Reshape a constant shape. */
#include "graph/infer_internal.h"

#include <inttypes.h>
#include <string.h>

/* Output 0 holds input 0's elements in the same order (Reshape, Flatten,
 * Squeeze, Unsqueeze): its contents are input 0's, reshaped. */
static bool carry(gr_ictx *c, int ndim, const int64_t *shape)
{
    const gr_tensor *in = gr_iin_const(c, 0);
    if (!in || in->elem_type == GR_STRING || in->numel > GR_FOLD_MAX) return true;
    gr_tensor *t = gr_inew_tensor(c, in->elem_type, ndim, shape);
    if (!t) return false;
    if (in->nbytes) memcpy(t->data, in->data, in->nbytes);
    gr_iout_data(c, 0, t);
    return true;
}

static int64_t prod(const int64_t *s, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= s[i];
    return p;
}

bool gr_infer_flatten(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "input", &x)) return false;
    int64_t axis = gr_iattr_int(c, "axis", 1);
    if (axis < -x->ndim || axis > x->ndim)
        return gr_ifail(c, "attribute 'axis' %" PRId64 " is out of range for rank %d", axis, x->ndim);
    if (axis < 0) axis += x->ndim;
    int64_t s[2] = {prod(x->shape, 0, (int)axis), prod(x->shape, (int)axis, x->ndim)};
    return gr_iout(c, 0, x->elem_type, 2, s) && carry(c, 2, s);
}

bool gr_infer_reshape(gr_ictx *c)
{
    const gr_type *x, *st;
    int64_t s[GR_MAX_DIMS];
    int n;
    if (!gr_iin_req(c, 0, "data", &x)) return false;
    if (c->opset < 5) {
        /* Reshape-1: the shape is an attribute. */
        bool bad;
        if (gr_iin(c, 1))
            return gr_ifail(c, "has a second input: at opset %" PRId64 " the shape is attribute "
                               "'shape'", c->opset);
        if (!gr_iattr_ints(c, "shape", s, GR_MAX_DIMS, &n, &bad))
            return bad ? false : gr_ifail(c, "attribute 'shape' is missing");
    } else if (!gr_iin_req(c, 1, "shape", &st) || !gr_iin_ints(c, 1, "shape", s, GR_MAX_DIMS, &n)) {
        return false;
    }
    bool allowzero = c->opset >= 14 && gr_iattr_int(c, "allowzero", 0) != 0;
    int infer_at = -1;
    int64_t known = 1;
    for (int i = 0; i < n; i++) {
        if (s[i] == 0 && !allowzero) {
            if (i >= x->ndim)
                return gr_ifail(c, "input 'shape' value %d is 0 (copy the input's extent), but "
                                   "the input has rank %d", i, x->ndim);
            s[i] = x->shape[i];
        }
        if (s[i] == -1) {
            if (infer_at >= 0) return gr_ifail(c, "input 'shape' has more than one -1");
            infer_at = i;
            continue;
        }
        if (s[i] < 0) return gr_ifail(c, "input 'shape' value %d is %" PRId64, i, s[i]);
        known *= s[i];
    }
    int64_t total = prod(x->shape, 0, x->ndim);
    if (infer_at >= 0) {
        if (known == 0 || total % known != 0)
            return gr_ifail(c, "input 'shape' leaves -1 no whole extent (%" PRId64
                               " elements over %" PRId64 ")", total, known);
        s[infer_at] = total / known;
    } else if (known != total) {
        return gr_ifail(c, "input 'shape' has %" PRId64 " elements, the data %" PRId64, known, total);
    }
    return gr_iout(c, 0, x->elem_type, n, s) && carry(c, n, s);
}

bool gr_infer_transpose(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "data", &x)) return false;
    int64_t perm[GR_MAX_DIMS], s[GR_MAX_DIMS];
    int n;
    bool bad, seen[GR_MAX_DIMS] = {false};
    if (!gr_iattr_ints(c, "perm", perm, GR_MAX_DIMS, &n, &bad)) {
        if (bad) return false;
        n = x->ndim;
        for (int i = 0; i < n; i++) perm[i] = n - 1 - i;
    }
    if (n != x->ndim)
        return gr_ifail(c, "attribute 'perm' has %d values, the input has rank %d", n, x->ndim);
    for (int i = 0; i < n; i++) {
        if (perm[i] < 0 || perm[i] >= n || seen[perm[i]])
            return gr_ifail(c, "attribute 'perm' is not a permutation of 0..%d", n - 1);
        seen[perm[i]] = true;
        s[i] = x->shape[perm[i]];
    }
    return gr_iout(c, 0, x->elem_type, n, s);
}

bool gr_infer_concat(gr_ictx *c)
{
    const gr_type *x0;
    if (!gr_iin_req(c, 0, "inputs", &x0)) return false;
    const gr_attr *aa = gr_node_attr(c->n, "axis");
    /* Concat-1 (opsets 1-3) concatenates on axis 1 by default. */
    if (!aa && c->opset >= 4) return gr_ifail(c, "attribute 'axis' is missing");
    int axis;
    if (!gr_iaxis(c, aa ? aa->i : 1, x0->ndim, "attribute 'axis'", &axis)) return false;
    int64_t s[GR_MAX_DIMS];
    memcpy(s, x0->shape, (size_t)x0->ndim * sizeof *s);
    s[axis] = 0;
    bool fold = x0->ndim == 1;
    for (int k = 0; k < c->n->n_inputs; k++) {
        const gr_type *x;
        if (!gr_iin_req(c, k, "inputs", &x)) return false;
        if (x->elem_type != x0->elem_type || x->ndim != x0->ndim)
            return gr_ifail(c, "input %d is %s of rank %d, input 0 %s of rank %d", k,
                            gr_elem_type_name(x->elem_type), x->ndim,
                            gr_elem_type_name(x0->elem_type), x0->ndim);
        for (int i = 0; i < x->ndim; i++)
            if (i != axis && x->shape[i] != x0->shape[i])
                return gr_ifail(c, "input %d dimension %d is %" PRId64 ", input 0 has %" PRId64,
                                k, i, x->shape[i], x0->shape[i]);
        s[axis] += x->shape[axis];
        const gr_tensor *t = gr_iin_const(c, k);
        fold = fold && t && t->elem_type != GR_STRING && t->numel <= GR_FOLD_MAX;
    }
    if (!gr_iout(c, 0, x0->elem_type, x0->ndim, s)) return false;
    if (!fold || s[0] > GR_FOLD_MAX) return true;
    gr_tensor *out = gr_inew_tensor(c, x0->elem_type, 1, s);
    if (!out) return false;
    size_t at = 0;
    for (int k = 0; k < c->n->n_inputs; k++) {
        const gr_tensor *t = gr_iin_const(c, k);
        if (t->nbytes) memcpy((char *)out->data + at, t->data, t->nbytes);
        at += t->nbytes;
    }
    gr_iout_data(c, 0, out);
    return true;
}

bool gr_infer_split(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "input", &x)) return false;
    int axis, nout = c->n->n_outputs, n = 0;
    if (!gr_iaxis(c, gr_iattr_int(c, "axis", 0), x->ndim, "attribute 'axis'", &axis)) return false;
    int64_t split[2 * GR_MAX_DIMS + 256];
    int max = (int)(sizeof split / sizeof *split);
    bool have = false, bad = false;
    if (c->opset >= 13) {
        if (gr_node_attr(c->n, "split"))
            return gr_ifail(c, "attribute 'split' is not allowed at opset %" PRId64
                               " (split is an input)", c->opset);
        have = gr_iin(c, 1) != NULL;
        if (have && !gr_iin_ints(c, 1, "split", split, max, &n)) return false;
    } else {
        /* Split-1 could also take the lengths as a second (float-typed) input. */
        if (gr_iin(c, 1))
            return gr_ifail(c, "input 'split' (Split-1) is not supported: give the lengths as "
                               "attribute 'split'");
        have = gr_iattr_ints(c, "split", split, max, &n, &bad);
        if (bad) return false;
    }
    int64_t dim = x->shape[axis];
    if (have) {
        if (n != nout)
            return gr_ifail(c, "'split' has %d values for %d outputs", n, nout);
        int64_t sum = 0;
        for (int i = 0; i < n; i++) {
            if (split[i] < 0) return gr_ifail(c, "'split' value %d is %" PRId64, i, split[i]);
            sum += split[i];
        }
        if (sum != dim)
            return gr_ifail(c, "'split' sums to %" PRId64 ", dimension %d is %" PRId64, sum, axis, dim);
    } else if (nout > max) {
        return gr_ifail(c, "%d outputs (at most %d)", nout, max);
    } else if (c->opset >= 18) {
        /* num_outputs chunks of ceil(dim / n), the last one smaller. */
        int64_t num = gr_iattr_int(c, "num_outputs", 0);
        if (num != nout)
            return gr_ifail(c, "attribute 'num_outputs' is %" PRId64 ", the node has %d outputs",
                            num, nout);
        int64_t chunk = (dim + num - 1) / num;
        for (int i = 0; i < nout; i++) {
            int64_t left = dim - chunk * i;
            split[i] = left < 0 ? 0 : left < chunk ? left : chunk;
        }
    } else {
        if (dim % nout != 0)
            return gr_ifail(c, "dimension %d (%" PRId64 ") does not split evenly into %d outputs",
                            axis, dim, nout);
        for (int i = 0; i < nout; i++) split[i] = dim / nout;
    }
    int64_t s[GR_MAX_DIMS];
    memcpy(s, x->shape, (size_t)x->ndim * sizeof *s);
    for (int k = 0; k < nout; k++) {
        s[axis] = split[k];
        if (!gr_iout(c, k, x->elem_type, x->ndim, s)) return false;
    }
    return true;
}

/* Slice-1 (opsets 1-9): starts, ends and axes are attributes, steps 1. */
static bool slice_attrs(gr_ictx *c, int64_t *starts, int64_t *ends, int64_t *axes, int *n)
{
    int ne, na;
    bool bad;
    if (gr_iin(c, 1))
        return gr_ifail(c, "has more than one input: at opset %" PRId64 " starts, ends and axes "
                           "are attributes", c->opset);
    if (!gr_iattr_ints(c, "starts", starts, GR_MAX_DIMS, n, &bad))
        return bad ? false : gr_ifail(c, "attribute 'starts' is missing");
    if (!gr_iattr_ints(c, "ends", ends, GR_MAX_DIMS, &ne, &bad))
        return bad ? false : gr_ifail(c, "attribute 'ends' is missing");
    if (*n != ne)
        return gr_ifail(c, "attributes 'starts' (%d values) and 'ends' (%d) differ in length", *n, ne);
    if (gr_iattr_ints(c, "axes", axes, GR_MAX_DIMS, &na, &bad)) {
        if (na != *n) return gr_ifail(c, "attribute 'axes' has %d values, 'starts' %d", na, *n);
    } else if (bad) {
        return false;
    } else {
        for (int i = 0; i < *n; i++) axes[i] = i;
    }
    return true;
}

bool gr_infer_slice(gr_ictx *c)
{
    const gr_type *x, *tmp;
    int64_t starts[GR_MAX_DIMS], ends[GR_MAX_DIMS], axes[GR_MAX_DIMS], steps[GR_MAX_DIMS];
    int ns, ne, na, nst;
    if (!gr_iin_req(c, 0, "data", &x)) return false;
    if (c->opset < 10) {
        if (!slice_attrs(c, starts, ends, axes, &ns)) return false;
        for (int i = 0; i < ns; i++) steps[i] = 1;
    } else {
        if (!gr_iin_req(c, 1, "starts", &tmp) || !gr_iin_req(c, 2, "ends", &tmp))
            return false;
        if (!gr_iin_ints(c, 1, "starts", starts, GR_MAX_DIMS, &ns) ||
            !gr_iin_ints(c, 2, "ends", ends, GR_MAX_DIMS, &ne))
            return false;
        if (ns != ne) return gr_ifail(c, "inputs 'starts' (%d values) and 'ends' (%d) differ in length", ns, ne);
        if (gr_iin(c, 3)) {
            if (!gr_iin_ints(c, 3, "axes", axes, GR_MAX_DIMS, &na)) return false;
            if (na != ns) return gr_ifail(c, "input 'axes' has %d values, 'starts' %d", na, ns);
        } else {
            for (int i = 0; i < ns; i++) axes[i] = i;
        }
        if (gr_iin(c, 4)) {
            if (!gr_iin_ints(c, 4, "steps", steps, GR_MAX_DIMS, &nst)) return false;
            if (nst != ns) return gr_ifail(c, "input 'steps' has %d values, 'starts' %d", nst, ns);
        } else {
            for (int i = 0; i < ns; i++) steps[i] = 1;
        }
    }
    int64_t s[GR_MAX_DIMS];
    bool seen[GR_MAX_DIMS] = {false};
    memcpy(s, x->shape, (size_t)x->ndim * sizeof *s);
    int64_t first = 0, step = 1; /* of dimension 0, for folding a 1-D slice */
    for (int i = 0; i < ns; i++) {
        int ax;
        if (!gr_iaxis(c, axes[i], x->ndim, "input 'axes' value", &ax)) return false;
        if (seen[ax]) return gr_ifail(c, "input 'axes' names dimension %d twice", ax);
        seen[ax] = true;
        int64_t d = x->shape[ax], st = steps[i], b = starts[i], e = ends[i];
        if (st == 0) return gr_ifail(c, "input 'steps' value %d is 0", i);
        if (b < 0) b = b < -d ? -1 : b + d;
        if (e < 0) e = e < -d ? -1 : e + d;
        /* Clamp to where a step in that direction can start and stop. */
        if (st > 0) {
            b = b < 0 ? 0 : b > d ? d : b;
            e = e < 0 ? 0 : e > d ? d : e;
        } else {
            b = b < 0 ? 0 : b > d - 1 ? d - 1 : b;
            e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
        }
        int64_t len = st > 0 ? (e - b + st - 1) / st : (b - e + (-st) - 1) / (-st);
        s[ax] = len > 0 && d > 0 ? len : 0;
        if (ax == 0) {
            first = b;
            step = st;
        }
    }
    if (!gr_iout(c, 0, x->elem_type, x->ndim, s)) return false;
    /* A piece of a folded shape (an expanded LayerNormalization's prefix
     * of X's shape) stays known. */
    const gr_tensor *data = gr_iin_const(c, 0);
    if (x->ndim != 1 || !data || data->elem_type == GR_STRING || data->numel > GR_FOLD_MAX) return true;
    gr_tensor *out = gr_inew_tensor(c, data->elem_type, 1, s);
    if (!out) return false;
    size_t es = gr_elem_type_size(data->elem_type);
    for (int64_t j = 0; j < s[0]; j++)
        memcpy((char *)out->data + (size_t)j * es, (const char *)data->data + (size_t)(first + j * step) * es, es);
    gr_iout_data(c, 0, out);
    return true;
}

bool gr_infer_gather(gr_ictx *c)
{
    const gr_type *x, *idx;
    if (!gr_iin_req(c, 0, "data", &x) || !gr_iin_req(c, 1, "indices", &idx)) return false;
    if (idx->elem_type != GR_INT64 && idx->elem_type != GR_INT32)
        return gr_ifail(c, "input 'indices' is %s, not int32 or int64", gr_elem_type_name(idx->elem_type));
    int axis;
    if (!gr_iaxis(c, gr_iattr_int(c, "axis", 0), x->ndim, "attribute 'axis'", &axis)) return false;
    int64_t s[GR_MAX_DIMS];
    int n = 0;
    if (x->ndim - 1 + idx->ndim > GR_MAX_DIMS)
        return gr_ifail(c, "the output would have more than %d dimensions", GR_MAX_DIMS);
    for (int i = 0; i < axis; i++) s[n++] = x->shape[i];
    for (int i = 0; i < idx->ndim; i++) s[n++] = idx->shape[i];
    for (int i = axis + 1; i < x->ndim; i++) s[n++] = x->shape[i];
    if (!gr_iout(c, 0, x->elem_type, n, s)) return false;
    /* Picking dimensions out of a folded shape. */
    const gr_tensor *data = gr_iin_const(c, 0), *it = gr_iin_const(c, 1);
    int64_t ind[GR_FOLD_MAX];
    int ni;
    if (!data || data->elem_type == GR_STRING || data->numel > GR_FOLD_MAX ||
        !gr_tensor_ints(it, ind, GR_FOLD_MAX, &ni))
        return true;
    int64_t outer = prod(x->shape, 0, axis), inner = prod(x->shape, axis + 1, x->ndim);
    int64_t d = x->shape[axis];
    size_t es = gr_elem_type_size(data->elem_type);
    for (int j = 0; j < ni; j++) {
        if (ind[j] < -d || ind[j] >= d)
            return gr_ifail(c, "input 'indices' value %" PRId64 " is out of range for dimension "
                               "%d (%" PRId64 ")", ind[j], axis, d);
        if (ind[j] < 0) ind[j] += d;
    }
    gr_tensor *out = gr_inew_tensor(c, data->elem_type, n, s);
    if (!out) return false;
    char *dst = out->data;
    for (int64_t o = 0; o < outer; o++)
        for (int j = 0; j < ni; j++) {
            size_t bytes = (size_t)inner * es;
            if (bytes) memcpy(dst, (const char *)data->data + ((size_t)(o * d + ind[j]) * bytes), bytes);
            dst += bytes;
        }
    gr_iout_data(c, 0, out);
    return true;
}

/* GatherElements: indices of data's rank pick along axis; the output has
 * the indices' shape, which may not exceed data's off the axis (those
 * dimensions are read at the output's own index). */
bool gr_infer_gather_elements(gr_ictx *c)
{
    const gr_type *x, *idx;
    if (!gr_iin_req(c, 0, "data", &x) || !gr_iin_req(c, 1, "indices", &idx)) return false;
    if (idx->elem_type != GR_INT64 && idx->elem_type != GR_INT32)
        return gr_ifail(c, "input 'indices' is %s, not int32 or int64", gr_elem_type_name(idx->elem_type));
    if (x->ndim < 1) return gr_ifail(c, "input data is a scalar; GatherElements needs rank >= 1");
    if (idx->ndim != x->ndim)
        return gr_ifail(c, "input indices has rank %d; it must have data's rank %d", idx->ndim, x->ndim);
    int axis;
    if (!gr_iaxis(c, gr_iattr_int(c, "axis", 0), x->ndim, "attribute 'axis'", &axis)) return false;
    for (int d = 0; d < x->ndim; d++)
        if (d != axis && idx->shape[d] > x->shape[d])
            return gr_ifail(c, "input indices dimension %d (%" PRId64 ") exceeds data's (%" PRId64
                               "); only the axis (%d) may differ",
                            d, idx->shape[d], x->shape[d], axis);
    return gr_iout(c, 0, x->elem_type, idx->ndim, idx->shape);
}

/* Axes of Squeeze/Unsqueeze: an attribute before opset 13, an input from it. */
static bool squeeze_axes(gr_ictx *c, int64_t *axes, int *n, bool *have)
{
    bool bad = false;
    *n = 0;
    if (c->opset >= 13) {
        if (gr_node_attr(c->n, "axes"))
            return gr_ifail(c, "attribute 'axes' is not allowed at opset %" PRId64
                               " (axes is an input)", c->opset);
        *have = gr_iin(c, 1) != NULL;
        return !*have || gr_iin_ints(c, 1, "axes", axes, GR_MAX_DIMS, n);
    }
    *have = gr_iattr_ints(c, "axes", axes, GR_MAX_DIMS, n, &bad);
    return !bad;
}

bool gr_infer_squeeze(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "data", &x)) return false;
    int64_t axes[GR_MAX_DIMS], s[GR_MAX_DIMS];
    int na, n = 0;
    bool have, drop[GR_MAX_DIMS] = {false};
    if (!squeeze_axes(c, axes, &na, &have)) return false;
    for (int i = 0; i < na; i++) {
        int ax;
        if (!gr_iaxis(c, axes[i], x->ndim, "axes value", &ax)) return false;
        if (x->shape[ax] != 1)
            return gr_ifail(c, "axes value %" PRId64 " names dimension %d of extent %" PRId64
                               " (must be 1)", axes[i], ax, x->shape[ax]);
        drop[ax] = true;
    }
    for (int i = 0; i < x->ndim; i++)
        if (!(have ? drop[i] : x->shape[i] == 1)) s[n++] = x->shape[i];
    return gr_iout(c, 0, x->elem_type, n, s) && carry(c, n, s);
}

bool gr_infer_unsqueeze(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "data", &x)) return false;
    int64_t axes[GR_MAX_DIMS], s[GR_MAX_DIMS];
    int na;
    bool have, ins[GR_MAX_DIMS] = {false};
    if (!squeeze_axes(c, axes, &na, &have)) return false;
    if (!have) return gr_ifail(c, "axes are missing");
    int r = x->ndim + na;
    if (r > GR_MAX_DIMS) return gr_ifail(c, "the output would have %d dimensions (at most %d)", r, GR_MAX_DIMS);
    for (int i = 0; i < na; i++) {
        int ax;
        if (!gr_iaxis(c, axes[i], r, "axes value", &ax)) return false;
        if (ins[ax]) return gr_ifail(c, "axes names dimension %d twice", ax);
        ins[ax] = true;
    }
    for (int i = 0, k = 0; i < r; i++) s[i] = ins[i] ? 1 : x->shape[k++];
    return gr_iout(c, 0, x->elem_type, r, s) && carry(c, r, s);
}

bool gr_infer_shape(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "data", &x)) return false;
    int64_t r = x->ndim, start = 0, end = r;
    if (c->opset >= 15) {
        start = gr_iattr_int(c, "start", 0);
        end = gr_iattr_int(c, "end", r);
    }
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    int64_t len = end > start ? end - start : 0;
    if (!gr_iout(c, 0, GR_INT64, 1, &len)) return false;
    gr_tensor *t = gr_inew_tensor(c, GR_INT64, 1, &len);
    if (!t) return false;
    if (len) memcpy(t->data, x->shape + start, (size_t)len * sizeof(int64_t));
    gr_iout_data(c, 0, t);
    return true;
}

bool gr_infer_constant(gr_ictx *c)
{
    if (c->n->n_attrs != 1)
        return gr_ifail(c, "needs exactly one of the attributes value, value_float(s), "
                           "value_int(s), value_string(s) (has %d attributes)", c->n->n_attrs);
    const gr_attr *a = &c->n->attrs[0];
    gr_tensor *t = NULL;
    int64_t len = (int64_t)a->n;
    if (strcmp(a->name, "value") == 0 && a->kind == GR_ATTR_TENSOR) {
        t = a->t;
    } else if (strcmp(a->name, "value_float") == 0 && a->kind == GR_ATTR_FLOAT) {
        if ((t = gr_inew_tensor(c, GR_FLOAT, 0, NULL))) memcpy(t->data, &a->f, 4);
    } else if (strcmp(a->name, "value_floats") == 0 && a->kind == GR_ATTR_FLOATS) {
        if ((t = gr_inew_tensor(c, GR_FLOAT, 1, &len)) && a->n) memcpy(t->data, a->floats, a->n * 4);
    } else if (strcmp(a->name, "value_int") == 0 && a->kind == GR_ATTR_INT) {
        if ((t = gr_inew_tensor(c, GR_INT64, 0, NULL))) memcpy(t->data, &a->i, 8);
    } else if (strcmp(a->name, "value_ints") == 0 && a->kind == GR_ATTR_INTS) {
        if ((t = gr_inew_tensor(c, GR_INT64, 1, &len)) && a->n) memcpy(t->data, a->ints, a->n * 8);
    } else if (strcmp(a->name, "value_string") == 0 && a->kind == GR_ATTR_STRING) {
        return gr_iout(c, 0, GR_STRING, 0, NULL);
    } else if (strcmp(a->name, "value_strings") == 0 && a->kind == GR_ATTR_STRINGS) {
        return gr_iout(c, 0, GR_STRING, 1, &len);
    } else {
        return gr_ifail(c, "attribute '%s' is not supported (value, value_float(s), value_int(s), "
                           "value_string(s) are)", a->name);
    }
    if (!t) return false;
    if (!gr_iout(c, 0, t->elem_type, t->ndim, t->shape)) return false;
    gr_iout_data(c, 0, t);
    return true;
}

bool gr_infer_constant_of_shape(gr_ictx *c)
{
    const gr_type *st;
    if (!gr_iin_req(c, 0, "input", &st)) return false;
    int64_t s[GR_MAX_DIMS];
    int n;
    if (!gr_iin_ints(c, 0, "input", s, GR_MAX_DIMS, &n)) return false;
    for (int i = 0; i < n; i++)
        if (s[i] < 0) return gr_ifail(c, "input 'input' value %d is %" PRId64, i, s[i]);
    const gr_attr *v = gr_node_attr(c->n, "value");
    int elem = GR_FLOAT;
    if (v) {
        if (v->kind != GR_ATTR_TENSOR || v->t->numel != 1 || v->t->elem_type == GR_STRING)
            return gr_ifail(c, "attribute 'value' must be a one-element numeric tensor");
        elem = v->t->elem_type;
    }
    if (!gr_iout(c, 0, elem, n, s)) return false;
    if (prod(s, 0, n) > GR_FOLD_MAX) return true;
    gr_tensor *t = gr_inew_tensor(c, elem, n, s);
    if (!t) return false;
    size_t es = gr_elem_type_size(elem);
    for (int64_t i = 0; v && i < t->numel; i++) memcpy((char *)t->data + (size_t)i * es, v->t->data, es);
    gr_iout_data(c, 0, t);
    return true;
}

/* CastLike: Cast to target_type's element type (its values unread). */
bool gr_infer_castlike(gr_ictx *c)
{
    const gr_type *x, *t;
    if (!gr_iin_req(c, 0, "input", &x) || !gr_iin_req(c, 1, "target_type", &t)) return false;
    return gr_iout(c, 0, t->elem_type, x->ndim, x->shape);
}

bool gr_infer_cast(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "input", &x)) return false;
    const gr_attr *to = gr_node_attr(c->n, "to");
    int64_t elem;
    if (c->opset < 6) {
        /* Cast-1 names the type: "FLOAT", "INT64", ... */
        int e;
        if (!to || to->kind != GR_ATTR_STRING) return gr_ifail(c, "attribute 'to' (a type name) is missing");
        if (!gr_legacy_cast_to(to, &e))
            return gr_ifail(c, "attribute 'to' is '%s', not a TensorProto type name (FLOAT, "
                               "INT64, ...)", to->s.data);
        elem = e;
    } else {
        if (!to || to->kind != GR_ATTR_INT) return gr_ifail(c, "attribute 'to' is missing");
        elem = to->i;
    }
    DLDataType dl;
    if (elem != GR_STRING && !gr_elem_type_dl((int)elem, &dl))
        return gr_ifail(c, "attribute 'to' is %" PRId64 ", not an element type", elem);
    if (!gr_iout(c, 0, (int)elem, x->ndim, x->shape)) return false;
    int64_t v[GR_FOLD_MAX];
    int n;
    if (elem != GR_INT64 || !gr_tensor_ints(gr_iin_const(c, 0), v, GR_FOLD_MAX, &n)) return true;
    gr_tensor *t = gr_inew_tensor(c, GR_INT64, x->ndim, x->shape);
    if (!t) return false;
    if (n) memcpy(t->data, v, (size_t)n * sizeof *v);
    gr_iout_data(c, 0, t);
    return true;
}
