/* graph/infer_fill.c — shape inference of the operators whose values are
 * a function of the output index: EyeLike (ones on a diagonal of its
 * input's shape), the window functions HannWindow, HammingWindow and
 * BlackmanWindow (a [size] window, size a constant), and OneHot (on/off
 * values at the indices' positions along a new axis of `depth`, a
 * constant). */
#include "graph/infer_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static bool is_number_type(int t)
{
    return t == GR_FLOAT || t == GR_DOUBLE || (t >= GR_UINT8 && t <= GR_INT64) || t == GR_UINT32 ||
           t == GR_UINT64 || t == GR_FLOAT16 || t == GR_BFLOAT16;
}

/* An INT attribute naming an element type (EyeLike's dtype, the windows'
 * output_datatype): absent gives dflt. */
static bool type_attr(gr_ictx *c, const char *name, int dflt, int *out)
{
    const gr_attr *a = gr_node_attr(c->n, name);
    *out = dflt;
    if (!a) return true;
    DLDataType dl;
    if (a->kind != GR_ATTR_INT || a->i == GR_STRING || !gr_elem_type_dl((int)a->i, &dl))
        return gr_ifail(c, "attribute '%s' must be an element type number (1 float, 7 int64, ...)", name);
    *out = (int)a->i;
    return true;
}

bool gr_infer_eyelike(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "input", &x)) return false;
    if (x->ndim != 2) return gr_ifail(c, "input has rank %d; EyeLike takes a matrix (rank 2)", x->ndim);
    const gr_attr *k = gr_node_attr(c->n, "k");
    if (k && k->kind != GR_ATTR_INT) return gr_ifail(c, "attribute 'k' must be an int");
    int t;
    if (!type_attr(c, "dtype", x->elem_type, &t)) return false;
    if (!is_number_type(t) && t != GR_BOOL)
        return gr_ifail(c, "output type %s is no number or bool", gr_elem_type_name(t));
    return gr_iout(c, 0, t, 2, x->shape);
}

/* The windows' length: input size, a constant integer scalar. */
bool gr_infer_window(gr_ictx *c)
{
    const gr_type *s;
    if (!gr_iin_req(c, 0, "size", &s)) return false;
    if (s->elem_type != GR_INT32 && s->elem_type != GR_INT64)
        return gr_ifail(c, "input size is %s, not int32 or int64", gr_elem_type_name(s->elem_type));
    int64_t v[8], size;
    int n;
    if (!gr_iin_ints(c, 0, "size", v, 8, &n)) return false;
    if (n != 1) return gr_ifail(c, "input size has %d values; it must be a scalar", n);
    size = v[0];
    if (size < 1) return gr_ifail(c, "input size is %" PRId64 "; it must be >= 1", size);
    const gr_attr *p = gr_node_attr(c->n, "periodic");
    if (p && (p->kind != GR_ATTR_INT || (p->i != 0 && p->i != 1)))
        return gr_ifail(c, "attribute 'periodic' must be 0 or 1");
    int t;
    if (!type_attr(c, "output_datatype", GR_FLOAT, &t)) return false;
    if (!is_number_type(t)) return gr_ifail(c, "attribute 'output_datatype' %s is no number", gr_elem_type_name(t));
    return gr_iout(c, 0, t, 1, &size);
}

/* depth: a constant scalar (or [1]) of any number type, read as an
 * integer (a float is truncated, as ONNX's reference does). */
static bool onehot_depth(gr_ictx *c, int64_t *depth)
{
    const gr_tensor *t = gr_iin_const(c, 1);
    if (!t)
        return gr_ifail(c, "input 'depth' ('%s') must be a constant (the output's extent on the "
                           "new axis)",
                        c->g->values[c->n->inputs[1]].name);
    if (t->numel != 1) return gr_ifail(c, "input depth has %" PRId64 " values; it must be one", t->numel);
    const void *p = t->data;
    double v;
    switch (t->elem_type) {
    case GR_FLOAT: { float f; memcpy(&f, p, 4); v = f; break; }
    case GR_DOUBLE: memcpy(&v, p, 8); break;
    case GR_INT8: v = *(const int8_t *)p; break;
    case GR_UINT8: v = *(const uint8_t *)p; break;
    case GR_INT16: { int16_t i; memcpy(&i, p, 2); v = i; break; }
    case GR_UINT16: { uint16_t i; memcpy(&i, p, 2); v = i; break; }
    case GR_INT32: { int32_t i; memcpy(&i, p, 4); v = i; break; }
    case GR_UINT32: { uint32_t i; memcpy(&i, p, 4); v = i; break; }
    case GR_INT64: { int64_t i; memcpy(&i, p, 8); v = (double)i; break; }
    case GR_UINT64: { uint64_t i; memcpy(&i, p, 8); v = (double)i; break; }
    default: return gr_ifail(c, "input depth is %s; it must be a number", gr_elem_type_name(t->elem_type));
    }
    if (!(v >= 1 && v < 1e9)) return gr_ifail(c, "input depth is %g; it must be >= 1", v);
    *depth = (int64_t)v;
    return true;
}

bool gr_infer_onehot(gr_ictx *c)
{
    const gr_type *ind, *dep, *val;
    if (!gr_iin_req(c, 0, "indices", &ind) || !gr_iin_req(c, 1, "depth", &dep) ||
        !gr_iin_req(c, 2, "values", &val))
        return false;
    if (!is_number_type(ind->elem_type))
        return gr_ifail(c, "input indices is %s; it must be a number", gr_elem_type_name(ind->elem_type));
    int64_t nval = 1;
    for (int d = 0; d < val->ndim; d++) nval *= val->shape[d];
    if (val->ndim != 1 || nval != 2)
        return gr_ifail(c, "input values must be [2] (off, on), not of %" PRId64 " values in rank %d",
                        nval, val->ndim);
    int64_t depth = 0;
    if (!onehot_depth(c, &depth)) return false;
    int r = ind->ndim + 1, axis;
    if (r > GR_MAX_DIMS) return gr_ifail(c, "the output would have more than %d dimensions", GR_MAX_DIMS);
    if (!gr_iaxis(c, gr_iattr_int(c, "axis", -1), r, "attribute 'axis'", &axis)) return false;
    int64_t s[GR_MAX_DIMS];
    for (int d = 0, k = 0; d < r; d++) s[d] = d == axis ? depth : ind->shape[k++];
    return gr_iout(c, 0, val->elem_type, r, s);
}
