/* graph/infer_convt.c — ConvTranspose's geometry and shape rule.
 *
 * Input X [N, C, in...], weights W [C, K/group, k...], bias B [K]; each
 * spatial output extent is
 *   stride (in - 1) + output_padding + (k - 1) dilation + 1 - pad_begin - pad_end,
 * or the attribute output_shape, from which the pads follow: with
 * total = stride (in - 1) + output_padding + (k - 1) dilation + 1 - out,
 * SAME_UPPER puts floor(total / 2) at the beginning and the rest at the
 * end, any other auto_pad the reverse (ONNX's ConvTranspose-11 text;
 * floor division, so a negative total, an output longer than the natural
 * one, is extended at the end). auto_pad SAME_* without output_shape asks
 * for out = in * stride, VALID for no pads. */
#include "graph/infer_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int64_t floor_half(int64_t a) { return a >= 0 ? a / 2 : -((-a + 1) / 2); }

/* An INTS attribute of n entries (or, for output_shape, n + 2: the
 * spatial ones are the last n), each >= lo; absent: dflt. */
static bool ints_attr(const gr_node *n, const char *name, int want, int64_t dflt, int64_t lo,
                      int64_t *out, bool *given, char *why, size_t size)
{
    const gr_attr *a = gr_node_attr(n, name);
    *given = a != NULL;
    if (!a) {
        for (int i = 0; i < want; i++) out[i] = dflt;
        return true;
    }
    bool full = strcmp(name, "output_shape") == 0 && a->kind == GR_ATTR_INTS && (int)a->n == want + 2;
    if (a->kind != GR_ATTR_INTS || ((int)a->n != want && !full)) {
        snprintf(why, size, "attribute '%s' must hold %d ints", name, want);
        return false;
    }
    for (int i = 0; i < want; i++) {
        out[i] = a->ints[full ? i + 2 : i];
        if (out[i] < lo) {
            snprintf(why, size, "attribute '%s' value %d is %" PRId64 " (must be >= %" PRId64 ")", name,
                     i, out[i], lo);
            return false;
        }
    }
    return true;
}

bool gr_convt_geometry(const gr_node *n, int sp, const int64_t *in, const int64_t *k, int64_t *s,
                       int64_t *d, int64_t *pb, int64_t *pe, int64_t *out, char *why, size_t size)
{
    int64_t op[GR_MAX_DIMS], pads[2 * GR_MAX_DIMS], os[GR_MAX_DIMS];
    bool given, have_os;
    const gr_attr *ap = gr_node_attr(n, "auto_pad");
    const char *mode = ap && ap->kind == GR_ATTR_STRING && ap->s.data ? ap->s.data : "NOTSET";
    bool upper = strcmp(mode, "SAME_UPPER") == 0, same = upper || strcmp(mode, "SAME_LOWER") == 0;
    bool valid = strcmp(mode, "VALID") == 0;
    if (!same && !valid && strcmp(mode, "NOTSET") != 0) {
        snprintf(why, size, "attribute 'auto_pad' is '%s', not NOTSET, SAME_UPPER, SAME_LOWER or VALID", mode);
        return false;
    }
    if (!ints_attr(n, "strides", sp, 1, 1, s, &given, why, size) ||
        !ints_attr(n, "dilations", sp, 1, 1, d, &given, why, size) ||
        !ints_attr(n, "output_padding", sp, 0, 0, op, &given, why, size) ||
        !ints_attr(n, "pads", 2 * sp, 0, 0, pads, &given, why, size) ||
        !ints_attr(n, "output_shape", sp, 0, 1, os, &have_os, why, size))
        return false;
    for (int i = 0; i < sp; i++) {
        int64_t natural = s[i] * (in[i] - 1) + op[i] + (k[i] - 1) * d[i] + 1;
        if (have_os || same) {
            out[i] = have_os ? os[i] : in[i] * s[i];
            int64_t total = natural - out[i];
            pb[i] = upper ? floor_half(total) : total - floor_half(total);
            pe[i] = total - pb[i];
        } else {
            pb[i] = valid ? 0 : pads[i];
            pe[i] = valid ? 0 : pads[sp + i];
            out[i] = natural - pb[i] - pe[i];
            if (out[i] < 1) {
                snprintf(why, size, "pads %" PRId64 " and %" PRId64 " leave spatial dimension %d no output "
                                    "(%" PRId64 ")", pb[i], pe[i], i, out[i]);
                return false;
            }
        }
    }
    return true;
}

bool gr_infer_conv_transpose(gr_ictx *c)
{
    const gr_type *x, *w;
    if (!gr_iin_req(c, 0, "X", &x) || !gr_iin_req(c, 1, "W", &w)) return false;
    if (x->ndim < 3) return gr_ifail(c, "input X has rank %d (needs N, C and spatial dimensions)", x->ndim);
    if (w->ndim != x->ndim) return gr_ifail(c, "input W has rank %d, X has rank %d", w->ndim, x->ndim);
    if (w->elem_type != x->elem_type)
        return gr_ifail(c, "inputs X (%s) and W (%s) must have one element type",
                        gr_elem_type_name(x->elem_type), gr_elem_type_name(w->elem_type));
    int sp = x->ndim - 2;
    int64_t group = gr_iattr_int(c, "group", 1);
    if (group < 1) return gr_ifail(c, "attribute 'group' is %" PRId64 " (must be >= 1)", group);
    if (w->shape[0] != x->shape[1] || x->shape[1] % group != 0)
        return gr_ifail(c, "X has %" PRId64 " channels; W [C, K/group, ...] has %" PRId64
                           " and group %" PRId64 " must divide them",
                        x->shape[1], w->shape[0], group);
    int64_t K = w->shape[1] * group;
    const gr_type *b = gr_iin(c, 2);
    if (b && (b->ndim != 1 || b->shape[0] != K))
        return gr_ifail(c, "input B must have shape [%" PRId64 "]", K);
    const gr_attr *ks = gr_node_attr(c->n, "kernel_shape");
    if (ks && (ks->kind != GR_ATTR_INTS || (int)ks->n != sp))
        return gr_ifail(c, "attribute 'kernel_shape' must hold %d ints", sp);
    for (int i = 0; ks && i < sp; i++)
        if (ks->ints[i] != w->shape[2 + i])
            return gr_ifail(c, "attribute 'kernel_shape' value %d is %" PRId64 ", W has %" PRId64, i,
                            ks->ints[i], w->shape[2 + i]);
    int64_t s[GR_MAX_DIMS], d[GR_MAX_DIMS], pb[GR_MAX_DIMS], pe[GR_MAX_DIMS], out[GR_MAX_DIMS];
    char why[256];
    if (!gr_convt_geometry(c->n, sp, x->shape + 2, w->shape + 2, s, d, pb, pe, out + 2, why, sizeof why))
        return gr_ifail(c, "%s", why);
    out[0] = x->shape[0];
    out[1] = K;
    return gr_iout(c, 0, x->elem_type, x->ndim, out);
}
