/* graph/infer_resize.c — Resize (opsets 11 to 18): the output shape from
 * the known inputs scales or sizes (exactly one of them), and the
 * geometry the lowering (lower_resize.c) maps output coordinates with.
 *
 * The output extent of a dimension is floor(input * scale) with scales,
 * the size itself with sizes; the scale the coordinates use is the given
 * one, or size / input with sizes (ONNX's reference, in double). What
 * Loom does not implement is refused by name: antialias, the
 * keep_aspect_ratio_policy other than stretch, and tf_crop_and_resize
 * with scales (whose output extent the specification and the reference
 * define differently; sizes are unambiguous). */
#include "graph/infer_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static bool why_fail(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool why_fail(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return false;
}

/* A STRING attribute among `names` (its index), or dflt when absent. */
static bool str_choice(const gr_node *n, const char *attr, const char *const *names, int count,
                       int dflt, int *out, char *why, size_t size)
{
    const gr_attr *a = gr_node_attr(n, attr);
    *out = dflt;
    if (!a) return true;
    if (a->kind != GR_ATTR_STRING) return why_fail(why, size, "attribute '%s' must be a string", attr);
    for (int i = 0; i < count; i++)
        if (strcmp(a->s.data, names[i]) == 0) {
            *out = i;
            return true;
        }
    char list[256] = "";
    for (int i = 0; i < count; i++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s", i ? (i == count - 1 ? " or " : ", ") : "", names[i]);
    }
    return why_fail(why, size, "attribute '%s' is '%s'; it must be %s", attr, a->s.data, list);
}

static bool float_attr(const gr_node *n, const char *attr, double dflt, double *out, char *why, size_t size)
{
    const gr_attr *a = gr_node_attr(n, attr);
    *out = dflt;
    if (!a) return true;
    if (a->kind != GR_ATTR_FLOAT) return why_fail(why, size, "attribute '%s' must be a float", attr);
    *out = (double)a->f;
    return true;
}

/* A float or double tensor's values into out (at most max). */
static bool tensor_reals(const gr_tensor *t, double *out, int max, int *n)
{
    if ((t->elem_type != GR_FLOAT && t->elem_type != GR_DOUBLE) || t->numel > max) return false;
    for (int64_t i = 0; i < t->numel; i++) {
        if (t->elem_type == GR_FLOAT) {
            float f;
            memcpy(&f, (const char *)t->data + 4 * i, 4);
            out[i] = (double)f;
        } else {
            memcpy(&out[i], (const char *)t->data + 8 * i, 8);
        }
    }
    *n = (int)t->numel;
    return true;
}

static const char *const mode_names[] = {"nearest", "linear", "cubic"};
static const char *const coord_names[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                          "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
static const char *const nearest_names[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};

bool gr_resize_geometry(const gr_node *n, int64_t opset, int rank, const int64_t *in,
                        const gr_tensor *roi, const gr_tensor *scales, const gr_tensor *sizes,
                        gr_resize_geom *g, char *why, size_t size)
{
    memset(g, 0, sizeof *g);
    int mode, coord, nearest;
    if (!str_choice(n, "mode", mode_names, 3, 0, &mode, why, size) ||
        !str_choice(n, "coordinate_transformation_mode", coord_names, 6, 0, &coord, why, size) ||
        !str_choice(n, "nearest_mode", nearest_names, 4, 0, &nearest, why, size) ||
        !float_attr(n, "cubic_coeff_a", -0.75, &g->cubic_a, why, size) ||
        !float_attr(n, "extrapolation_value", 0.0, &g->extrapolation, why, size))
        return false;
    g->mode = (gr_resize_mode)mode;
    g->coord = (gr_resize_coord)coord;
    g->nearest = (gr_resize_nearest)nearest;
    const gr_attr *ex = gr_node_attr(n, "exclude_outside");
    if (ex && (ex->kind != GR_ATTR_INT || (ex->i != 0 && ex->i != 1)))
        return why_fail(why, size, "attribute 'exclude_outside' must be 0 or 1");
    g->exclude_outside = ex && ex->i == 1;
    /* opset 18's attributes */
    static const char *const v18[] = {"antialias", "axes", "keep_aspect_ratio_policy"};
    for (int i = 0; i < 3; i++)
        if (opset < 18 && gr_node_attr(n, v18[i]))
            return why_fail(why, size, "attribute '%s' is not defined before opset 18", v18[i]);
    const gr_attr *aa = gr_node_attr(n, "antialias");
    if (aa && (aa->kind != GR_ATTR_INT || aa->i != 0))
        return why_fail(why, size, "attribute 'antialias' other than 0 is not supported");
    const gr_attr *kp = gr_node_attr(n, "keep_aspect_ratio_policy");
    if (kp && (kp->kind != GR_ATTR_STRING || strcmp(kp->s.data, "stretch") != 0))
        return why_fail(why, size, "attribute 'keep_aspect_ratio_policy' other than 'stretch' is not supported");
    /* axes: the dimensions scales, sizes and roi speak of (all by default) */
    int axes[GR_MAX_DIMS], na = rank;
    for (int d = 0; d < rank; d++) axes[d] = d;
    const gr_attr *ax = gr_node_attr(n, "axes");
    if (ax) {
        if (ax->kind != GR_ATTR_INTS || ax->n > (size_t)rank)
            return why_fail(why, size, "attribute 'axes' must be a list of at most %d ints (the rank)", rank);
        na = (int)ax->n;
        bool seen[GR_MAX_DIMS] = {false};
        for (int i = 0; i < na; i++) {
            int64_t a = ax->ints[i];
            if (a < -rank || a >= rank)
                return why_fail(why, size, "attribute 'axes' value %" PRId64 " is out of range for rank %d", a,
                                rank);
            axes[i] = (int)(a < 0 ? a + rank : a);
            if (seen[axes[i]]) return why_fail(why, size, "attribute 'axes' repeats axis %d", axes[i]);
            seen[axes[i]] = true;
        }
    }
    bool has_scales = scales && scales->numel > 0, has_sizes = sizes && sizes->numel > 0;
    if (has_scales == has_sizes)
        return why_fail(why, size, "exactly one of the inputs 'scales' and 'sizes' must be given (%s)",
                        has_scales ? "both are" : "neither is");
    double sc[GR_MAX_DIMS];
    int64_t sz[GR_MAX_DIMS];
    int cnt;
    if (has_scales) {
        if (scales->ndim != 1 || !tensor_reals(scales, sc, GR_MAX_DIMS, &cnt) || cnt != na)
            return why_fail(why, size, "input 'scales' must be a 1-D float tensor of %d values", na);
        for (int i = 0; i < na; i++)
            if (!(sc[i] > 0)) return why_fail(why, size, "input 'scales' value %d is %g; it must be > 0", i, sc[i]);
        if (g->coord == GR_RESIZE_TF_CROP_AND_RESIZE)
            return why_fail(why, size,
                            "coordinate_transformation_mode 'tf_crop_and_resize' with input 'scales' is not "
                            "supported (give 'sizes')");
    } else {
        if (sizes->ndim != 1 || !gr_tensor_ints(sizes, sz, GR_MAX_DIMS, &cnt) || cnt != na)
            return why_fail(why, size, "input 'sizes' must be a 1-D int64 tensor of %d values", na);
        for (int i = 0; i < na; i++)
            if (sz[i] < 1)
                return why_fail(why, size, "input 'sizes' value %d is %" PRId64 "; it must be >= 1", i, sz[i]);
    }
    for (int d = 0; d < rank; d++) {
        g->out[d] = in[d];
        g->scale[d] = 1;
        g->roi_start[d] = 0;
        g->roi_end[d] = 1;
    }
    for (int i = 0; i < na; i++) {
        int d = axes[i];
        if (has_scales) {
            g->scale[d] = sc[i];
            g->out[d] = (int64_t)floor((double)in[d] * sc[i]);
            if (g->out[d] < 1)
                return why_fail(why, size,
                                "input 'scales' value %d (%g) leaves dimension %d of extent %" PRId64 " empty", i,
                                sc[i], d, in[d]);
        } else {
            g->out[d] = sz[i];
            g->scale[d] = (double)sz[i] / (double)in[d];
        }
    }
    if (g->coord == GR_RESIZE_TF_CROP_AND_RESIZE) {
        double r[2 * GR_MAX_DIMS];
        if (!roi || roi->numel == 0)
            return why_fail(why, size, "coordinate_transformation_mode 'tf_crop_and_resize' needs input 'roi'");
        if (roi->ndim != 1 || !tensor_reals(roi, r, 2 * GR_MAX_DIMS, &cnt) || cnt != 2 * na)
            return why_fail(why, size, "input 'roi' must be a 1-D float tensor of %d values (starts, ends)",
                            2 * na);
        for (int i = 0; i < na; i++) {
            g->roi_start[axes[i]] = r[i];
            g->roi_end[axes[i]] = r[na + i];
        }
    }
    return true;
}

bool gr_infer_resize(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "X", &x)) return false;
    if (x->ndim < 1) return gr_ifail(c, "input X is a scalar; Resize needs rank >= 1");
    /* roi, scales, sizes: read at compile time */
    static const char *const names[] = {NULL, "roi", "scales", "sizes"};
    const gr_tensor *t[4] = {NULL, NULL, NULL, NULL};
    for (int k = 1; k < 4 && k < c->n->n_inputs; k++) {
        if (!gr_iin(c, k)) continue;
        t[k] = gr_iin_const(c, k);
        if (!t[k])
            return gr_ifail(c, "input '%s' ('%s') must be a constant (an initializer or a Constant node)",
                            names[k], c->g->values[c->n->inputs[k]].name);
    }
    gr_resize_geom g;
    char why[256];
    if (!gr_resize_geometry(c->n, c->opset, x->ndim, x->shape, t[1], t[2], t[3], &g, why, sizeof why))
        return gr_ifail(c, "%s", why);
    bool real = x->elem_type == GR_FLOAT || x->elem_type == GR_DOUBLE;
    if (g.mode != GR_RESIZE_NEAREST && !real)
        return gr_ifail(c, "input X is %s; mode '%s' is defined for float and double only",
                        gr_elem_type_name(x->elem_type), mode_names[g.mode]);
    return gr_iout(c, 0, x->elem_type, x->ndim, g.out);
}
