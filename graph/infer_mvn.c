/* graph/infer_mvn.c — MeanVarianceNormalization (opset 9): X of floats
 * normalized to mean 0 and variance 1 over `axes` (default [0, 2, 3],
 * which needs rank 4); Y has X's shape. */
#include "graph/infer_internal.h"

#include <inttypes.h>
#include <stdio.h>

/* The reduced dimensions as flags (reduced[d]); false after the error. */
bool gr_mvn_axes(const gr_node *n, int rank, bool *reduced, char *why, size_t size)
{
    int64_t axes[GR_MAX_DIMS] = {0, 2, 3};
    int na = 3;
    const gr_attr *a = gr_node_attr(n, "axes");
    if (a) {
        if (a->kind != GR_ATTR_INTS || a->n > (size_t)rank) {
            snprintf(why, size, "attribute 'axes' must be a list of at most %d ints (the rank)", rank);
            return false;
        }
        na = (int)a->n;
        for (int i = 0; i < na; i++) axes[i] = a->ints[i];
    }
    for (int d = 0; d < rank; d++) reduced[d] = false;
    for (int i = 0; i < na; i++) {
        if (axes[i] < -rank || axes[i] >= rank) {
            snprintf(why, size, "axis %" PRId64 " of attribute 'axes'%s is out of range for rank %d", axes[i],
                     a ? "" : " (default [0, 2, 3])", rank);
            return false;
        }
        int d = (int)(axes[i] < 0 ? axes[i] + rank : axes[i]);
        if (reduced[d]) {
            snprintf(why, size, "attribute 'axes' repeats axis %d", d);
            return false;
        }
        reduced[d] = true;
    }
    return true;
}

bool gr_infer_mvn(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "X", &x)) return false;
    if (x->elem_type != GR_FLOAT && x->elem_type != GR_DOUBLE)
        return gr_ifail(c, "input X is %s; MeanVarianceNormalization takes float or double",
                        gr_elem_type_name(x->elem_type));
    bool reduced[GR_MAX_DIMS];
    char why[160];
    if (!gr_mvn_axes(c->n, x->ndim, reduced, why, sizeof why)) return gr_ifail(c, "%s", why);
    return gr_iout(c, 0, x->elem_type, x->ndim, x->shape);
}
