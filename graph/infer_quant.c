/* graph/infer_quant.c — QuantizeLinear and DequantizeLinear (opsets 10
 * and 13): x quantized as saturate(round(x / scale) + zero_point) into
 * the zero point's type (uint8 without one), dequantized as
 * (x - zero_point) scale into float. scale and zero_point are scalars
 * (per tensor) or, from opset 13, one value per element of dimension
 * `axis` (default 1) of x. */
#include "graph/infer_internal.h"

#include <inttypes.h>
#include <string.h>

bool gr_infer_quant(gr_ictx *c)
{
    bool q = strcmp(c->n->op_type, "QuantizeLinear") == 0;
    const char *sn = q ? "y_scale" : "x_scale", *zn = q ? "y_zero_point" : "x_zero_point";
    const gr_type *x, *s, *z = gr_iin(c, 2);
    if (!gr_iin_req(c, 0, "x", &x) || !gr_iin_req(c, 1, sn, &s)) return false;
    const char *xt = gr_elem_type_name(x->elem_type);
    if (q && x->elem_type != GR_FLOAT && x->elem_type != GR_INT32)
        return gr_ifail(c, "input x is %s; QuantizeLinear takes float or int32", xt);
    if (!q && x->elem_type != GR_INT8 && x->elem_type != GR_UINT8 && x->elem_type != GR_INT32)
        return gr_ifail(c, "input x is %s; DequantizeLinear takes int8, uint8 or int32", xt);
    if (s->elem_type != GR_FLOAT)
        return gr_ifail(c, "input %s is %s, not float", sn, gr_elem_type_name(s->elem_type));
    int zt = z ? z->elem_type : q ? GR_UINT8 : x->elem_type;
    if (q && zt != GR_UINT8 && zt != GR_INT8)
        return gr_ifail(c, "input %s is %s, not uint8 or int8", zn, gr_elem_type_name(zt));
    if (!q && zt != x->elem_type)
        return gr_ifail(c, "inputs x (%s) and %s (%s) must have one element type", xt, zn,
                        gr_elem_type_name(zt));
    int axis = 0;
    int64_t ns = 1;
    for (int d = 0; d < s->ndim; d++) ns *= s->shape[d];
    if (s->ndim > 1 || (s->ndim == 1 && (c->opset < 13 || ns != 1))) {
        if (c->opset < 13 || s->ndim != 1)
            return gr_ifail(c, "input %s must be a scalar%s", sn, c->opset < 13 ? " before opset 13" : " or 1-D");
        if (!gr_iaxis(c, gr_iattr_int(c, "axis", 1), x->ndim, "attribute 'axis'", &axis)) return false;
        if (ns != x->shape[axis])
            return gr_ifail(c, "input %s has %" PRId64 " values; x's dimension %d (the axis) has %" PRId64,
                            sn, ns, axis, x->shape[axis]);
    }
    bool zsame = !z || z->ndim == s->ndim;
    for (int d = 0; zsame && z && d < z->ndim; d++) zsame = z->shape[d] == s->shape[d];
    if (!zsame) return gr_ifail(c, "input %s must have %s's shape", zn, sn);
    return gr_iout(c, 0, q ? zt : GR_FLOAT, x->ndim, x->shape);
}

/* DynamicQuantizeLinear (opset 11): float x to uint8 y with the scale and
 * zero point (float and uint8 scalars) that map [min(x, 0), max(x, 0)]
 * onto [0, 255]. */
bool gr_infer_dynamic_quant(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "x", &x)) return false;
    if (x->elem_type != GR_FLOAT)
        return gr_ifail(c, "input x is %s; DynamicQuantizeLinear takes float", gr_elem_type_name(x->elem_type));
    return gr_iout(c, 0, GR_UINT8, x->ndim, x->shape) && gr_iout(c, 1, GR_FLOAT, 0, NULL) &&
           gr_iout(c, 2, GR_UINT8, 0, NULL);
}
