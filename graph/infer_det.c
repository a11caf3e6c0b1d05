/* graph/infer_det.c — Det (opset 11): the determinants of X [..., M, M]
 * (float types), one per leading index: Y [...]. Loom expands a
 * determinant by Leibniz's formula (lower_det.c), M! products of M
 * entries, so M is at most GR_DET_MAX_M. */
#include "graph/infer_internal.h"

#include <inttypes.h>

bool gr_infer_det(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "X", &x)) return false;
    if (x->elem_type != GR_FLOAT && x->elem_type != GR_DOUBLE && x->elem_type != GR_FLOAT16 &&
        x->elem_type != GR_BFLOAT16)
        return gr_ifail(c, "input X is %s; Det is defined for float types only", gr_elem_type_name(x->elem_type));
    if (x->ndim < 2) return gr_ifail(c, "input X has rank %d; Det needs [..., M, M]", x->ndim);
    int64_t m = x->shape[x->ndim - 1];
    if (x->shape[x->ndim - 2] != m)
        return gr_ifail(c, "input X's matrices are %" PRId64 " x %" PRId64 "; Det needs square ones",
                        x->shape[x->ndim - 2], m);
    if (m > GR_DET_MAX_M)
        return gr_ifail(c, "input X's matrices are %" PRId64 " x %" PRId64 "; Loom expands a determinant into its "
                           "M! products (Leibniz's formula), for M up to %d",
                        m, m, GR_DET_MAX_M);
    return gr_iout(c, 0, x->elem_type, x->ndim - 2, x->shape);
}
