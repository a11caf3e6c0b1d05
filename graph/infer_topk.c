/* graph/infer_topk.c — TopK (opsets 1, 10, 11): the k largest (or, with
 * largest 0 from opset 11, smallest) elements along `axis` and their
 * int64 positions. k is an attribute before opset 10 and a one-element
 * int64 input from then on, read at compile time: Loom's shapes are
 * static, so a k computed at run time is refused as every such input is.
 * k = 0 gives empty outputs, known without running (gr_infer_shapes). */
#include "graph/infer_internal.h"

#include <inttypes.h>

bool gr_infer_topk(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "X", &x)) return false;
    if (x->elem_type == GR_BOOL || x->elem_type == GR_STRING || x->elem_type == GR_COMPLEX64 ||
        x->elem_type == GR_COMPLEX128)
        return gr_ifail(c, "input X is %s; TopK takes numbers", gr_elem_type_name(x->elem_type));
    if (x->ndim < 1) return gr_ifail(c, "input X is a scalar; TopK needs rank >= 1");
    int axis;
    if (!gr_iaxis(c, gr_iattr_int(c, "axis", -1), x->ndim, "attribute 'axis'", &axis)) return false;
    int64_t k;
    if (c->opset < 10) {
        const gr_attr *a = gr_node_attr(c->n, "k");
        if (!a || a->kind != GR_ATTR_INT) return gr_ifail(c, "attribute 'k' (an int) is required before opset 10");
        k = a->i;
    } else {
        const gr_type *kt;
        if (!gr_iin_req(c, 1, "K", &kt)) return false;
        if (kt->elem_type != GR_INT64) return gr_ifail(c, "input 'K' is %s, not int64", gr_elem_type_name(kt->elem_type));
        int n;
        if (!gr_iin_ints(c, 1, "K", &k, 1, &n)) return false;
        if (n != 1) return gr_ifail(c, "input 'K' must hold one value");
    }
    if (c->opset < 11 && (gr_node_attr(c->n, "largest") || gr_node_attr(c->n, "sorted")))
        return gr_ifail(c, "attributes 'largest' and 'sorted' are not defined before opset 11");
    int64_t largest = gr_iattr_int(c, "largest", 1), sorted = gr_iattr_int(c, "sorted", 1);
    if ((largest != 0 && largest != 1) || (sorted != 0 && sorted != 1))
        return gr_ifail(c, "attributes 'largest' (%" PRId64 ") and 'sorted' (%" PRId64 ") must be 0 or 1", largest,
                        sorted);
    if (k < 0 || k > x->shape[axis])
        return gr_ifail(c, "k is %" PRId64 "; it must be in [0, %" PRId64 "] (dimension %d of X)", k, x->shape[axis],
                        axis);
    int64_t out[GR_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) out[d] = d == axis ? k : x->shape[d];
    return gr_iout(c, 0, x->elem_type, x->ndim, out) && gr_iout(c, 1, GR_INT64, x->ndim, out);
}
