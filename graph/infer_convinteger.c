/* graph/infer_convinteger.c — the integer convolutions (opset 10):
 * ConvInteger, Conv's geometry (groups, strides, dilations, pads,
 * auto_pad) on 8-bit X and W less their zero points (x_zero_point per
 * tensor; w_zero_point per tensor or per output channel, [M]), an int32
 * output; QLinearConv, that sum plus an int32 bias B [M] requantized
 * with x_scale, w_scale (per tensor or channel), y_scale and
 * y_zero_point into y's 8-bit type. The lowering is Conv's
 * (graph/lower_nn.c). */
#include "graph/infer_internal.h"

#include <inttypes.h>

static bool is8(int t) { return t == GR_INT8 || t == GR_UINT8; }

static bool zero_point(gr_ictx *c, int k, const char *what, int elem, int64_t per)
{
    const gr_type *t = gr_iin(c, k);
    if (!t) {
        bool needed = c->n->op_type[0] == 'Q' && k != 8;
        return needed ? gr_ifail(c, "input '%s' is missing", what) : true;
    }
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
    bool qlinear = c->n->op_type[0] == 'Q';
    int iw = qlinear ? 3 : 1;
    const gr_type *x, *w;
    if (!gr_iin_req(c, 0, "x", &x) || !gr_iin_req(c, iw, "w", &w)) return false;
    if (!is8(x->elem_type) || !is8(w->elem_type))
        return gr_ifail(c, "inputs x (%s) and w (%s) must be int8 or uint8", gr_elem_type_name(x->elem_type),
                        gr_elem_type_name(w->elem_type));
    int64_t m = w->ndim >= 1 ? w->shape[0] : 1;
    if (!zero_point(c, 2, "x_zero_point", x->elem_type, 1) ||
        !zero_point(c, qlinear ? 5 : 3, "w_zero_point", w->elem_type, m))
        return false;
    int yt = GR_INT32;
    if (qlinear) {
        const gr_type *yz;
        if (!zero_point(c, 1, "x_scale", GR_FLOAT, 1) || !zero_point(c, 4, "w_scale", GR_FLOAT, m) ||
            !zero_point(c, 6, "y_scale", GR_FLOAT, 1) || !gr_iin_req(c, 7, "y_zero_point", &yz))
            return false;
        if (!is8(yz->elem_type)) return gr_ifail(c, "input 'y_zero_point' is %s, not int8 or uint8", gr_elem_type_name(yz->elem_type));
        if (!zero_point(c, 7, "y_zero_point", yz->elem_type, 1)) return false;
        const gr_type *b = gr_iin(c, 8);
        if (b && (b->elem_type != GR_INT32 || b->ndim != 1 || b->shape[0] != m))
            return gr_ifail(c, "input B must be int32 of shape [%" PRId64 "]", m);
        yt = yz->elem_type;
    }
    /* Conv's shape rule on x and w alone (Conv's third input is a bias) */
    gr_node shadow = *c->n;
    int pair[2] = {c->n->inputs[0], c->n->inputs[iw]};
    shadow.inputs = pair;
    shadow.n_inputs = 2;
    shadow.n_outputs = 1;
    gr_ictx sc = *c;
    sc.n = &shadow;
    if (!gr_infer_conv(&sc)) return false;
    const gr_type *out = &c->g->values[c->n->outputs[0]].type;
    return gr_iout(c, 0, yt, out->ndim, out->shape);
}
