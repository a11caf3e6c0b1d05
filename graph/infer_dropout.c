/* graph/infer_dropout.c — Dropout, which Loom runs as inference does: the
 * output is the input and the mask, when asked for, is all ones.
 *
 * A Dropout in training mode drops elements at random (numpy's generator
 * in ONNX's reference, the seed attribute elsewhere), which no compiled
 * kernel can reproduce; Loom refuses it by name, unless its ratio is 0,
 * where training drops nothing and is the identity too. Training mode is
 * is_test=0 before opset 7 (its default), the input training_mode from
 * opset 12 (default false), and never at 7 to 11 (the runtime decides:
 * Loom is inference). training_mode must be a constant: Loom decides the
 * mode when it compiles.
 *
 * The mask has X's type at opsets 1 to 9 and is bool from 10 on. */
#include "graph/infer_internal.h"

#include <inttypes.h>
#include <string.h>

static bool is_float_type(int t)
{
    return t == GR_FLOAT || t == GR_DOUBLE || t == GR_FLOAT16 || t == GR_BFLOAT16;
}

/* The single value of a float or double constant into *v; false when the
 * tensor is of another type (a float16 ratio is not read). */
static bool const_double(const gr_tensor *t, double *v)
{
    if (t->numel != 1) return false;
    if (t->elem_type == GR_FLOAT) {
        float f;
        memcpy(&f, t->data, 4);
        *v = f;
        return true;
    }
    if (t->elem_type == GR_DOUBLE) {
        memcpy(v, t->data, 8);
        return true;
    }
    return false;
}

/* Whether the node trains; false after an error when the inputs or
 * attributes saying so are malformed. ratio receives the drop ratio. */
static bool training_mode(gr_ictx *c, bool *training, double *ratio)
{
    *training = false;
    *ratio = 0.5;
    if (c->opset < 12) {
        const gr_attr *r = gr_node_attr(c->n, "ratio");
        if (r && r->kind != GR_ATTR_FLOAT) return gr_ifail(c, "attribute 'ratio' must be a float");
        if (r) *ratio = r->f;
        if (c->opset < 7) *training = gr_iattr_int(c, "is_test", 0) == 0;
        return true;
    }
    const gr_type *rt = gr_iin(c, 1), *tt = gr_iin(c, 2);
    const gr_tensor *r = gr_iin_const(c, 1), *t = gr_iin_const(c, 2);
    if (rt && !is_float_type(rt->elem_type))
        return gr_ifail(c, "input ratio is %s; it must be a float type", gr_elem_type_name(rt->elem_type));
    if (r && r->numel != 1)
        return gr_ifail(c, "input ratio has %" PRId64 " elements; it must be a scalar", r->numel);
    if (r && const_double(r, ratio) && !(*ratio >= 0 && *ratio < 1))
        return gr_ifail(c, "input ratio is %g; it must be in [0, 1)", *ratio);
    if (!tt) return true;
    if (tt->elem_type != GR_BOOL)
        return gr_ifail(c, "input training_mode is %s; it must be bool", gr_elem_type_name(tt->elem_type));
    if (!t)
        return gr_ifail(c, "input 'training_mode' ('%s') must be a constant: Loom decides between "
                           "inference and training when it compiles",
                        c->g->values[c->n->inputs[2]].name);
    if (t->numel != 1)
        return gr_ifail(c, "input training_mode has %" PRId64 " elements; it must be a scalar", t->numel);
    *training = ((const uint8_t *)t->data)[0] != 0;
    /* Training reads the ratio: a run-time one cannot be checked for 0. */
    if (*training && rt && !r)
        return gr_ifail(c, "input 'ratio' ('%s') must be a constant when training_mode is true",
                        c->g->values[c->n->inputs[1]].name);
    if (*training && r && !const_double(r, ratio))
        return gr_ifail(c, "input ratio is %s; Loom reads a training ratio of float or double only",
                        gr_elem_type_name(r->elem_type));
    return true;
}

bool gr_infer_dropout(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "data", &x)) return false;
    if (!is_float_type(x->elem_type))
        return gr_ifail(c, "input data is %s; Dropout is defined for float types only",
                        gr_elem_type_name(x->elem_type));
    bool training;
    double ratio;
    if (!training_mode(c, &training, &ratio)) return false;
    if (training && ratio != 0)
        return gr_ifail(c, "%s with ratio %g drops elements at random; Loom runs inference only "
                           "(training with ratio 0 is the identity)",
                        c->opset < 7 ? "attribute 'is_test' is 0 (training mode)"
                                     : "input training_mode is true",
                        ratio);
    if (!gr_iout(c, 0, x->elem_type, x->ndim, x->shape)) return false;
    return gr_iout(c, 1, c->opset < 10 ? x->elem_type : GR_BOOL, x->ndim, x->shape);
}
