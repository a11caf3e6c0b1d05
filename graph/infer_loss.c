/* graph/infer_loss.c — shape inference of the loss operators
 * NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opset 12 on):
 * input [N, C] or [N, C, d1, ..., dk] of floats, target [N, d1, ..., dk]
 * of int32 or int64 class indices, an optional weight [C]; the loss is
 * [N, d1, ..., dk] with reduction 'none', a scalar with 'sum' or 'mean'
 * (the default). SoftmaxCrossEntropyLoss's optional second output is the
 * log-probabilities, the input's shape. */
#include "graph/infer_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static bool is_float_type(int t)
{
    return t == GR_FLOAT || t == GR_DOUBLE || t == GR_FLOAT16 || t == GR_BFLOAT16;
}

static void shape_text(char *buf, size_t size, int n, const int64_t *s)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%" PRId64, i ? "," : "", s[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

bool gr_infer_loss(gr_ictx *c)
{
    bool sce = strcmp(c->n->op_type, "SoftmaxCrossEntropyLoss") == 0;
    const char *xn = sce ? "scores" : "input", *tn = sce ? "labels" : "target";
    const gr_type *x, *t;
    if (!gr_iin_req(c, 0, xn, &x) || !gr_iin_req(c, 1, tn, &t)) return false;
    if (!is_float_type(x->elem_type))
        return gr_ifail(c, "input %s is %s; %s is defined for float types only", xn,
                        gr_elem_type_name(x->elem_type), c->n->op_type);
    if (x->ndim < 2)
        return gr_ifail(c, "input %s has rank %d; it must be [N, C] or [N, C, d1, ...]", xn, x->ndim);
    if (t->elem_type != GR_INT32 && t->elem_type != GR_INT64)
        return gr_ifail(c, "input %s is %s, not int32 or int64", tn, gr_elem_type_name(t->elem_type));
    /* target: the input's shape without C */
    int64_t ts[GR_MAX_DIMS];
    int tr = 0;
    for (int d = 0; d < x->ndim; d++)
        if (d != 1) ts[tr++] = x->shape[d];
    bool same = t->ndim == tr;
    for (int d = 0; same && d < tr; d++) same = t->shape[d] == ts[d];
    if (!same) {
        char got[256], want[256];
        shape_text(got, sizeof got, t->ndim, t->shape);
        shape_text(want, sizeof want, tr, ts);
        return gr_ifail(c, "input %s has shape %s; it must be [N, d1, ...] = %s", tn, got, want);
    }
    const gr_type *w = gr_iin(c, 2);
    if (w && (w->ndim != 1 || w->shape[0] != x->shape[1]))
        return gr_ifail(c, "input weights must be [C] = [%" PRId64 "]", x->shape[1]);
    if (w && w->elem_type != x->elem_type)
        return gr_ifail(c, "inputs %s (%s) and weights (%s) must have one element type", xn,
                        gr_elem_type_name(x->elem_type), gr_elem_type_name(w->elem_type));
    const gr_attr *r = gr_node_attr(c->n, "reduction");
    if (r && r->kind != GR_ATTR_STRING) return gr_ifail(c, "attribute 'reduction' must be a string");
    const char *red = gr_iattr_str(c, "reduction", "mean");
    if (strcmp(red, "none") != 0 && strcmp(red, "sum") != 0 && strcmp(red, "mean") != 0)
        return gr_ifail(c, "attribute 'reduction' is '%s'; it must be 'none', 'sum' or 'mean'", red);
    const gr_attr *ii = gr_node_attr(c->n, "ignore_index");
    if (ii && ii->kind != GR_ATTR_INT) return gr_ifail(c, "attribute 'ignore_index' must be an int");
    bool none = strcmp(red, "none") == 0;
    if (!gr_iout(c, 0, x->elem_type, none ? tr : 0, ts)) return false;
    return !sce || gr_iout(c, 1, x->elem_type, x->ndim, x->shape);
}
