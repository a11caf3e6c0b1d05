/* graph/infer_dft.c — DFT (opset 17): the discrete Fourier transform of
 * input [batch, ..., n, ..., 1 or 2] (real, or complex as re/im pairs in
 * the last dimension) along `axis` (default 1; the last dimension holds
 * the parts and is no signal axis). The length L is dft_length (a
 * constant input, read at compile time) or n: the signal is cut or
 * padded with zeros to it. The output holds L complex values along the
 * axis, or L/2 + 1 with onesided (the rest mirror them for a real
 * signal). inverse computes the inverse transform (scaled by 1/L); with
 * onesided it is not supported. */
#include "graph/infer_internal.h"

#include <inttypes.h>

bool gr_dft_axis(const gr_node *n, int rank, int *axis)
{
    const gr_attr *a = gr_node_attr(n, "axis");
    int64_t ax = a && a->kind == GR_ATTR_INT ? a->i : 1;
    if (ax < 0) ax += rank - 1;
    if (ax < 0 || ax >= rank - 1) return false;
    *axis = (int)ax;
    return true;
}

bool gr_infer_dft(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "input", &x)) return false;
    if (x->elem_type != GR_FLOAT && x->elem_type != GR_DOUBLE && x->elem_type != GR_FLOAT16 &&
        x->elem_type != GR_BFLOAT16)
        return gr_ifail(c, "input is %s; DFT takes floats", gr_elem_type_name(x->elem_type));
    if (x->ndim < 2 || (x->shape[x->ndim - 1] != 1 && x->shape[x->ndim - 1] != 2))
        return gr_ifail(c, "input must have rank >= 2 and a last dimension of 1 (real) or 2 (complex)");
    int axis;
    if (!gr_dft_axis(c->n, x->ndim, &axis))
        return gr_ifail(c, "attribute 'axis' %" PRId64 " is out of range: the signal axes are 0 to %d",
                        gr_iattr_int(c, "axis", 1), x->ndim - 2);
    int64_t len = x->shape[axis];
    if (gr_iin(c, 1)) {
        int64_t v;
        int nv;
        if (!gr_iin_ints(c, 1, "dft_length", &v, 1, &nv)) return false;
        if (nv != 1 || v < 1) return gr_ifail(c, "input 'dft_length' must be one value >= 1");
        len = v;
    }
    int64_t inv = gr_iattr_int(c, "inverse", 0), one = gr_iattr_int(c, "onesided", 0);
    if ((inv != 0 && inv != 1) || (one != 0 && one != 1))
        return gr_ifail(c, "attributes 'inverse' and 'onesided' must be 0 or 1");
    if (inv && one) return gr_ifail(c, "an inverse onesided DFT is not supported");
    int64_t out[GR_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) out[d] = x->shape[d];
    out[axis] = one ? len / 2 + 1 : len;
    out[x->ndim - 1] = 2;
    return gr_iout(c, 0, x->elem_type, x->ndim, out);
}
