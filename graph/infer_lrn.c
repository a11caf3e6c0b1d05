/* graph/infer_lrn.c — LRN (local response normalization across channels,
 * AlexNet's): X [N, C, ...] of floats, attributes size (required, >= 1),
 * alpha, beta, bias (floats); Y has X's shape. */
#include "graph/infer_internal.h"

#include <inttypes.h>

bool gr_infer_lrn(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "X", &x)) return false;
    if (x->elem_type != GR_FLOAT && x->elem_type != GR_DOUBLE && x->elem_type != GR_FLOAT16 &&
        x->elem_type != GR_BFLOAT16)
        return gr_ifail(c, "input X is %s; LRN is defined for float types only", gr_elem_type_name(x->elem_type));
    if (x->ndim < 2) return gr_ifail(c, "input X has rank %d; LRN needs [N, C, ...]", x->ndim);
    const gr_attr *s = gr_node_attr(c->n, "size");
    if (!s || s->kind != GR_ATTR_INT) return gr_ifail(c, "attribute 'size' (an int) is missing");
    if (s->i < 1) return gr_ifail(c, "attribute 'size' is %" PRId64 "; it must be >= 1", s->i);
    static const char *const floats[] = {"alpha", "beta", "bias"};
    for (int i = 0; i < 3; i++) {
        const gr_attr *a = gr_node_attr(c->n, floats[i]);
        if (a && a->kind != GR_ATTR_FLOAT) return gr_ifail(c, "attribute '%s' must be a float", floats[i]);
    }
    return gr_iout(c, 0, x->elem_type, x->ndim, x->shape);
}
