/* graph/infer_gridsample.c — GridSample (opset 16): X [N, C, H, W]
 * sampled at the normalized positions of grid [N, Ho, Wo, 2] (x, then y,
 * in [-1, 1]) into Y [N, C, Ho, Wo]. The N-dimensional form is opset
 * 20's, past the opsets Loom reads. X and grid hold floats. */
#include "graph/infer_internal.h"

#include <inttypes.h>
#include <string.h>

static bool is_float(int t) { return t == GR_FLOAT || t == GR_DOUBLE || t == GR_FLOAT16 || t == GR_BFLOAT16; }

bool gr_gridsample_modes(const gr_node *n, gr_gridsample_mode *mode, gr_gridsample_pad *pad, bool *align,
                         const char **why)
{
    const gr_attr *m = gr_node_attr(n, "mode"), *p = gr_node_attr(n, "padding_mode"),
                  *a = gr_node_attr(n, "align_corners");
    const char *ms = m && m->kind == GR_ATTR_STRING ? m->s.data : m ? "" : "bilinear";
    const char *ps = p && p->kind == GR_ATTR_STRING ? p->s.data : p ? "" : "zeros";
    if (strcmp(ms, "bilinear") == 0) *mode = GR_GS_BILINEAR;
    else if (strcmp(ms, "nearest") == 0) *mode = GR_GS_NEAREST;
    else if (strcmp(ms, "bicubic") == 0) *mode = GR_GS_BICUBIC;
    else {
        *why = "attribute 'mode' must be bilinear, nearest or bicubic";
        return false;
    }
    if (strcmp(ps, "zeros") == 0) *pad = GR_GS_ZEROS;
    else if (strcmp(ps, "border") == 0) *pad = GR_GS_BORDER;
    else if (strcmp(ps, "reflection") == 0) *pad = GR_GS_REFLECTION;
    else {
        *why = "attribute 'padding_mode' must be zeros, border or reflection";
        return false;
    }
    if (a && (a->kind != GR_ATTR_INT || (a->i != 0 && a->i != 1))) {
        *why = "attribute 'align_corners' must be 0 or 1";
        return false;
    }
    *align = a && a->i == 1;
    return true;
}

bool gr_infer_gridsample(gr_ictx *c)
{
    const gr_type *x, *g;
    if (!gr_iin_req(c, 0, "X", &x) || !gr_iin_req(c, 1, "grid", &g)) return false;
    if (!is_float(x->elem_type) || !is_float(g->elem_type))
        return gr_ifail(c, "inputs X (%s) and grid (%s) must hold floats", gr_elem_type_name(x->elem_type),
                        gr_elem_type_name(g->elem_type));
    if (x->ndim != 4) return gr_ifail(c, "input X has rank %d; GridSample takes [N, C, H, W]", x->ndim);
    if (g->ndim != 4 || g->shape[0] != x->shape[0] || g->shape[3] != 2)
        return gr_ifail(c, "input grid must have shape [%" PRId64 ", Ho, Wo, 2]", x->shape[0]);
    gr_gridsample_mode mode;
    gr_gridsample_pad pad;
    bool align;
    const char *why;
    if (!gr_gridsample_modes(c->n, &mode, &pad, &align, &why)) return gr_ifail(c, "%s", why);
    int64_t out[4] = {x->shape[0], x->shape[1], g->shape[1], g->shape[2]};
    return gr_iout(c, 0, x->elem_type, 4, out);
}
