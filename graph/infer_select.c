/* graph/infer_select.c — operators that pick elements through a run-time
 * index tensor: GatherND (opset 11; batch_dims from 12) and
 * ReverseSequence (opset 10). */
#include "graph/infer_internal.h"

#include <inttypes.h>
#include <string.h>

/* GatherND: indices [i..., k] address data's dimensions b .. b + k - 1
 * (after b batch dimensions shared by both); the output is indices'
 * leading dimensions followed by data's after the addressed ones. */
bool gr_infer_gather_nd(gr_ictx *c)
{
    const gr_type *x, *idx;
    if (!gr_iin_req(c, 0, "data", &x) || !gr_iin_req(c, 1, "indices", &idx)) return false;
    if (idx->elem_type != GR_INT64)
        return gr_ifail(c, "input 'indices' is %s, not int64", gr_elem_type_name(idx->elem_type));
    int r = x->ndim, q = idx->ndim;
    if (r < 1 || q < 1) return gr_ifail(c, "inputs data and indices must have rank >= 1 (%d, %d)", r, q);
    const gr_attr *ba = gr_node_attr(c->n, "batch_dims");
    if (ba && c->opset < 12) return gr_ifail(c, "attribute 'batch_dims' is not defined before opset 12");
    if (ba && ba->kind != GR_ATTR_INT) return gr_ifail(c, "attribute 'batch_dims' must be an int");
    int64_t b = ba ? ba->i : 0;
    if (b < 0 || b >= q || b >= r)
        return gr_ifail(c, "attribute 'batch_dims' is %" PRId64 "; it must be in [0, %d) (below both ranks)", b,
                        q < r ? q : r);
    for (int d = 0; d < b; d++)
        if (idx->shape[d] != x->shape[d])
            return gr_ifail(c, "batch dimension %d differs: indices %" PRId64 ", data %" PRId64, d, idx->shape[d],
                            x->shape[d]);
    int64_t k = idx->shape[q - 1];
    if (k < 1 || k > r - b)
        return gr_ifail(c, "input indices' last dimension is %" PRId64 "; it must be in [1, %" PRId64 "] (data's rank less batch_dims)",
                        k, r - b);
    int64_t out[GR_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < q - 1; d++) out[n++] = idx->shape[d];
    for (int64_t d = b + k; d < r; d++) out[n++] = x->shape[d];
    return gr_iout(c, 0, x->elem_type, n, out);
}

/* ReverseSequence: input [time, batch, ...] or [batch, time, ...] and
 * sequence_lens [batch]. */
bool gr_infer_reverse_sequence(gr_ictx *c)
{
    const gr_type *x, *len;
    if (!gr_iin_req(c, 0, "input", &x) || !gr_iin_req(c, 1, "sequence_lens", &len)) return false;
    if (x->ndim < 2) return gr_ifail(c, "input has rank %d; ReverseSequence needs rank >= 2", x->ndim);
    int64_t ta = gr_iattr_int(c, "time_axis", 0), bax = gr_iattr_int(c, "batch_axis", 1);
    if ((ta != 0 && ta != 1) || (bax != 0 && bax != 1) || ta == bax)
        return gr_ifail(c, "attributes time_axis (%" PRId64 ") and batch_axis (%" PRId64 ") must be 0 and 1 in some order",
                        ta, bax);
    if (len->elem_type != GR_INT64)
        return gr_ifail(c, "input 'sequence_lens' is %s, not int64", gr_elem_type_name(len->elem_type));
    if (len->ndim != 1 || len->shape[0] != x->shape[bax])
        return gr_ifail(c, "input 'sequence_lens' must have shape [%" PRId64 "] (the batch)", x->shape[bax]);
    return gr_iout(c, 0, x->elem_type, x->ndim, x->shape);
}
