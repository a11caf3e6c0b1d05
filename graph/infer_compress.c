/* graph/infer_compress.c — Compress (opsets 9, 11: negative axis): the
 * slices of input along `axis` (or the elements of the flattened input,
 * without one) whose condition entry is true. The output's extent is the
 * count of true entries, known only from the condition's values: Loom's
 * shapes are static, so the condition must be a constant (a condition
 * computed at run time is refused as every shape-giving input is). A
 * condition shorter than the axis drops the positions past it; one that
 * selects past the axis is refused, as numpy's compress does. */
#include "graph/infer_internal.h"

#include <inttypes.h>

bool gr_compress_plan(const gr_tensor *cond, int64_t extent, int64_t *count, int64_t *past)
{
    const unsigned char *b = cond->data;
    *count = 0;
    *past = -1;
    for (int64_t i = 0; i < cond->numel; i++)
        if (b[i]) {
            if (i >= extent) {
                *past = i;
                return false;
            }
            (*count)++;
        }
    return true;
}

bool gr_infer_compress(gr_ictx *c)
{
    const gr_type *x, *ct;
    if (!gr_iin_req(c, 0, "input", &x) || !gr_iin_req(c, 1, "condition", &ct)) return false;
    if (ct->elem_type != GR_BOOL || ct->ndim != 1)
        return gr_ifail(c, "input 'condition' must be a rank-1 bool tensor (it is %s of rank %d)",
                        gr_elem_type_name(ct->elem_type), ct->ndim);
    const gr_tensor *cond = gr_iin_const(c, 1);
    if (!cond)
        return gr_ifail(c, "input 'condition' ('%s') must be a constant (an initializer, a Constant node or a folded "
                           "value): the output's shape depends on it",
                        c->g->values[c->n->inputs[1]].name);
    const gr_attr *aa = gr_node_attr(c->n, "axis");
    int axis = -1;
    int64_t extent = 1;
    if (aa) {
        if (aa->kind != GR_ATTR_INT) return gr_ifail(c, "attribute 'axis' must be an int");
        if (!gr_iaxis(c, aa->i, x->ndim, "attribute 'axis'", &axis)) return false;
        extent = x->shape[axis];
    } else {
        for (int d = 0; d < x->ndim; d++) extent *= x->shape[d];
    }
    int64_t count, past;
    if (!gr_compress_plan(cond, extent, &count, &past))
        return gr_ifail(c, "input 'condition' selects position %" PRId64 ", past the %" PRId64 " positions %s", past,
                        extent, aa ? "along the axis" : "of the flattened input");
    if (!aa) return gr_iout(c, 0, x->elem_type, 1, &count);
    int64_t out[GR_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) out[d] = d == axis ? count : x->shape[d];
    return gr_iout(c, 0, x->elem_type, x->ndim, out);
}
