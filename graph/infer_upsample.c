/* graph/infer_upsample.c — Upsample (opsets 7 to 9; Resize replaced it
 * at 10): each dimension of X scaled up by scales[d] >= 1 (an attribute
 * at 7 and 8, a constant float input read at compile time at 9), output
 * extent floor(extent x scale). Mode nearest (the default) reads
 * X[floor(i / scale)]; mode linear is not supported. */
#include "graph/infer_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

bool gr_upsample_scales(const gr_node *n, int64_t opset, const gr_tensor *in, int rank, double *scales,
                        const char **why)
{
    int cnt = 0;
    if (opset < 9) {
        const gr_attr *a = gr_node_attr(n, "scales");
        if (!a || a->kind != GR_ATTR_FLOATS) {
            *why = "attribute 'scales' (floats) is required before opset 9";
            return false;
        }
        cnt = (int)a->n;
        for (int i = 0; i < cnt && i < rank; i++) scales[i] = a->floats[i];
    } else {
        if (!in || in->elem_type != GR_FLOAT || in->ndim != 1) {
            *why = "input 'scales' must be a constant 1-D float tensor";
            return false;
        }
        cnt = (int)in->numel;
        for (int i = 0; i < cnt && i < rank; i++) scales[i] = ((const float *)in->data)[i];
    }
    if (cnt != rank) {
        *why = "scales must hold one value per dimension of X";
        return false;
    }
    for (int i = 0; i < rank; i++)
        if (!(scales[i] >= 1)) {
            *why = "scales must be >= 1 (Upsample only enlarges)";
            return false;
        }
    return true;
}

bool gr_infer_upsample(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "X", &x)) return false;
    const char *mode = gr_iattr_str(c, "mode", "nearest");
    if (strcmp(mode, "nearest") != 0) return gr_ifail(c, "mode '%s' is not supported (only nearest)", mode);
    const gr_tensor *st = NULL;
    if (c->opset >= 9) {
        if (!gr_iin(c, 1)) return gr_ifail(c, "input 'scales' is missing");
        st = gr_iin_const(c, 1);
        if (!st)
            return gr_ifail(c, "input 'scales' ('%s') must be a constant (the output's shape depends on it)",
                            c->g->values[c->n->inputs[1]].name);
    }
    double sc[GR_MAX_DIMS];
    const char *why;
    if (!gr_upsample_scales(c->n, c->opset, st, x->ndim, sc, &why)) return gr_ifail(c, "%s", why);
    int64_t out[GR_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) out[d] = (int64_t)floor((double)x->shape[d] * sc[d]);
    return gr_iout(c, 0, x->elem_type, x->ndim, out);
}
