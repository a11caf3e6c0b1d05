/* graph/infer_convinteger.c — ConvInteger (opset 10): Conv's geometry
 * (groups, strides, dilations, pads, auto_pad) on 8-bit X and W less
 * their zero points (x_zero_point per tensor; w_zero_point per tensor or
 * per output channel, [M]), an int32 output. The lowering is Conv's
 * (graph/lower_nn.c). */
#include "graph/infer_internal.h"

#include <inttypes.h>

static bool is8(int t) { return t == GR_INT8 || t == GR_UINT8; }

static bool zero_point(gr_ictx *c, int k, const char *what, int elem, int64_t per)
{
    const gr_type *t = gr_iin(c, k);
    if (!t) return true;
    if (t->elem_type != elem)
        return gr_ifail(c, "input '%s' is %s, not %s", what, gr_elem_type_name(t->elem_type), gr_elem_type_name(elem));
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    if (t->ndim > 1 || (n != 1 && n != per))
        return gr_ifail(c, "input '%s' must hold one value%s", what, per > 1 ? " or one per output channel" : "");
    return true;
}

bool gr_infer_convinteger(gr_ictx *c)
{
    const gr_type *x, *w;
    if (!gr_iin_req(c, 0, "x", &x) || !gr_iin_req(c, 1, "w", &w)) return false;
    if (!is8(x->elem_type) || !is8(w->elem_type))
        return gr_ifail(c, "inputs x (%s) and w (%s) must be int8 or uint8", gr_elem_type_name(x->elem_type),
                        gr_elem_type_name(w->elem_type));
    if (!zero_point(c, 2, "x_zero_point", x->elem_type, 1) ||
        !zero_point(c, 3, "w_zero_point", w->elem_type, w->ndim >= 1 ? w->shape[0] : 1))
        return false;
    /* Conv's shape rule on x and w alone (Conv's third input is a bias) */
    gr_node shadow = *c->n;
    shadow.n_inputs = 2;
    shadow.n_outputs = 1;
    gr_ictx sc = *c;
    sc.n = &shadow;
    if (!gr_infer_conv(&sc)) return false;
    const gr_type *out = &c->g->values[c->n->outputs[0]].type;
    return gr_iout(c, 0, GR_INT32, out->ndim, out->shape);
}
