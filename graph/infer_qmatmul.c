/* graph/infer_qmatmul.c — the quantized matrix products (opset 10):
 * MatMulInteger, (A - a_zero_point) (B - b_zero_point) in int32, and
 * QLinearMatMul, that product requantized with the scales and y's zero
 * point into y's 8-bit type. Shapes follow MatMul (batched,
 * broadcasting). A's scale and zero point are per tensor (a scalar or
 * one value) or per row of A ([M]); B's per tensor or per column ([N]);
 * y's per tensor. */
#include "graph/infer_internal.h"

#include <inttypes.h>

static bool is8(int t) { return t == GR_INT8 || t == GR_UINT8; }

/* Input k (left out: fine when optional) holds one value or `per`
 * values; *what names it. */
static bool param(gr_ictx *c, int k, const char *what, int elem, int64_t per, bool optional)
{
    const gr_type *t = gr_iin(c, k);
    if (!t) return optional ? true : gr_ifail(c, "input '%s' is missing", what);
    if (elem >= 0 && t->elem_type != elem)
        return gr_ifail(c, "input '%s' is %s, not %s", what, gr_elem_type_name(t->elem_type), gr_elem_type_name(elem));
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    if (t->ndim > 1 || (n != 1 && n != per))
        return gr_ifail(c, "input '%s' must hold one value or %" PRId64 " (one per %s)", what, per,
                        k == 1 || k == 2 || k == 5 ? "row of A" : "column of B");
    return true;
}

bool gr_infer_qmatmul(gr_ictx *c)
{
    bool qlinear = c->n->op_type[0] == 'Q';
    int ia = 0, ib = qlinear ? 3 : 1;
    const gr_type *a, *b;
    if (!gr_iin_req(c, ia, "A", &a) || !gr_iin_req(c, ib, "B", &b)) return false;
    if (!is8(a->elem_type) || !is8(b->elem_type))
        return gr_ifail(c, "inputs A (%s) and B (%s) must be int8 or uint8", gr_elem_type_name(a->elem_type),
                        gr_elem_type_name(b->elem_type));
    if (a->ndim < 1 || b->ndim < 1) return gr_ifail(c, "inputs A and B must have rank >= 1");
    int64_t m = a->ndim > 1 ? a->shape[a->ndim - 2] : 1, n = b->ndim > 1 ? b->shape[b->ndim - 1] : 1;
    if (!qlinear) {
        if (!param(c, 2, "a_zero_point", a->elem_type, m, true) || !param(c, 3, "b_zero_point", b->elem_type, n, true))
            return false;
    } else {
        if (!param(c, 1, "a_scale", GR_FLOAT, m, false) || !param(c, 2, "a_zero_point", a->elem_type, m, false) ||
            !param(c, 4, "b_scale", GR_FLOAT, n, false) || !param(c, 5, "b_zero_point", b->elem_type, n, false) ||
            !param(c, 6, "y_scale", GR_FLOAT, 1, false))
            return false;
        const gr_type *yz;
        if (!gr_iin_req(c, 7, "y_zero_point", &yz)) return false;
        if (!is8(yz->elem_type)) return gr_ifail(c, "input 'y_zero_point' is %s, not int8 or uint8", gr_elem_type_name(yz->elem_type));
        if (!param(c, 7, "y_zero_point", yz->elem_type, 1, false)) return false;
    }
    /* MatMul's shape rule, on the two matrices */
    gr_node shadow = *c->n;
    int pair[2] = {c->n->inputs[ia], c->n->inputs[ib]};
    shadow.inputs = pair;
    shadow.n_inputs = 2;
    shadow.n_outputs = 1;
    gr_ictx sc = *c;
    sc.n = &shadow;
    if (!gr_infer_matmul(&sc)) return false;
    const gr_type *out = &c->g->values[c->n->outputs[0]].type;
    int et = qlinear ? gr_iin(c, 7)->elem_type : GR_INT32;
    return gr_iout(c, 0, et, out->ndim, out->shape);
}
