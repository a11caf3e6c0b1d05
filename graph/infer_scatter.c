/* graph/infer_scatter.c — the scatters: Scatter (opsets 9, 10; ONNX
 * replaced it by ScatterElements at 11), ScatterElements (11; the
 * reduction attribute from 16: none, add, mul, and from 18 max, min) and
 * ScatterND (11; reduction likewise). The output is data with updates
 * written (or combined) at the positions indices name; it has data's
 * type and shape. */
#include "graph/infer_internal.h"

#include <inttypes.h>
#include <string.h>

#include "graph/scatter.h"

bool gr_scatter_reduction(const gr_node *n, int64_t opset, gr_scatter_red *out, const char **why)
{
    const gr_attr *a = gr_node_attr(n, "reduction");
    *out = GR_SCATTER_NONE;
    if (!a) return true;
    if (opset < 16) {
        *why = "attribute 'reduction' is not defined before opset 16";
        return false;
    }
    if (a->kind != GR_ATTR_STRING) {
        *why = "attribute 'reduction' must be a string";
        return false;
    }
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    for (int i = 0; i < 5; i++)
        if (a->s.len == strlen(names[i]) && memcmp(a->s.data, names[i], a->s.len) == 0) {
            if (i >= 3 && opset < 18) {
                *why = "reductions 'max' and 'min' are not defined before opset 18";
                return false;
            }
            *out = (gr_scatter_red)i;
            return true;
        }
    *why = "attribute 'reduction' must be none, add, mul, max or min";
    return false;
}

/* The checks every scatter shares: data and updates of one type, indices
 * int32/int64 (int64 only for ScatterND), a reduction valid at the opset
 * and not on bool data. */
static bool common(gr_ictx *c, bool nd, const gr_type **x, const gr_type **idx, const gr_type **upd)
{
    if (!gr_iin_req(c, 0, "data", x) || !gr_iin_req(c, 1, "indices", idx) || !gr_iin_req(c, 2, "updates", upd))
        return false;
    int it = (*idx)->elem_type;
    if (nd ? it != GR_INT64 : it != GR_INT64 && it != GR_INT32)
        return gr_ifail(c, "input 'indices' is %s, not %s", gr_elem_type_name(it), nd ? "int64" : "int32 or int64");
    if ((*upd)->elem_type != (*x)->elem_type)
        return gr_ifail(c, "input updates is %s, data is %s: they must match", gr_elem_type_name((*upd)->elem_type),
                        gr_elem_type_name((*x)->elem_type));
    if ((*x)->ndim < 1) return gr_ifail(c, "input data is a scalar; %s needs rank >= 1", c->n->op_type);
    gr_scatter_red red;
    const char *why;
    if (!gr_scatter_reduction(c->n, c->opset, &red, &why)) return gr_ifail(c, "%s", why);
    if (red != GR_SCATTER_NONE && ((*x)->elem_type == GR_BOOL || (*x)->elem_type == GR_STRING))
        return gr_ifail(c, "a reduction on %s data is not supported", gr_elem_type_name((*x)->elem_type));
    if ((*x)->elem_type == GR_STRING) return gr_ifail(c, "string data is not supported");
    return true;
}

/* Scatter, ScatterElements: indices and updates of one shape and data's
 * rank, no dimension but the axis longer than data's. */
bool gr_infer_scatter_elements(gr_ictx *c)
{
    const gr_type *x, *idx, *upd;
    if (strcmp(c->n->op_type, "Scatter") == 0 && c->opset >= 11)
        return gr_ifail(c, "Scatter is replaced by ScatterElements from opset 11");
    if (!common(c, false, &x, &idx, &upd)) return false;
    int axis;
    if (!gr_iaxis(c, gr_iattr_int(c, "axis", 0), x->ndim, "attribute 'axis'", &axis)) return false;
    if (idx->ndim != x->ndim)
        return gr_ifail(c, "input indices has rank %d; it must have data's rank %d", idx->ndim, x->ndim);
    if (upd->ndim != idx->ndim) return gr_ifail(c, "input updates must have indices' shape");
    for (int d = 0; d < x->ndim; d++) {
        if (upd->shape[d] != idx->shape[d]) return gr_ifail(c, "input updates must have indices' shape");
        if (d != axis && idx->shape[d] > x->shape[d])
            return gr_ifail(c, "input indices dimension %d (%" PRId64 ") exceeds data's (%" PRId64 "); only the axis (%d) may",
                            d, idx->shape[d], x->shape[d], axis);
    }
    return gr_iout(c, 0, x->elem_type, x->ndim, x->shape);
}

/* ScatterND: indices [q..., k] address data's first k dimensions; updates
 * is indices' leading dimensions followed by data's after the k. */
bool gr_infer_scatter_nd(gr_ictx *c)
{
    const gr_type *x, *idx, *upd;
    if (!common(c, true, &x, &idx, &upd)) return false;
    int r = x->ndim, q = idx->ndim;
    if (q < 1) return gr_ifail(c, "input indices is a scalar; ScatterND needs rank >= 1");
    int64_t k = idx->shape[q - 1];
    if (k < 1 || k > r)
        return gr_ifail(c, "input indices' last dimension is %" PRId64 "; it must be in [1, %d] (data's rank)", k, r);
    int64_t want[GR_MAX_DIMS];
    int nw = 0;
    for (int d = 0; d < q - 1; d++) want[nw++] = idx->shape[d];
    for (int64_t d = k; d < r; d++) want[nw++] = x->shape[d];
    bool ok = upd->ndim == nw;
    for (int d = 0; ok && d < nw; d++) ok = upd->shape[d] == want[d];
    if (!ok) return gr_ifail(c, "input updates must have shape indices.shape[:-1] + data.shape[%" PRId64 ":]", k);
    return gr_iout(c, 0, x->elem_type, x->ndim, x->shape);
}
