/* graph/infer_fold.c — arithmetic on known small tensors, run by
 * inference after a node's rule: Add, Sub, Mul, Div, Neg, Abs and Cast
 * whose inputs all have known contents (initializers, Constant nodes,
 * folded shape arithmetic) get known contents too, so that shapes
 * computed from shapes (an expanded LayerNormalization's rank less its
 * axis, a window's length as a float) are static as the operators that
 * read them require. Only int32, int64, float and double, at most
 * GR_FOLD_MAX elements; integer division by zero and casts out of the
 * target's range are left unfolded (the node then runs as any other). */
#include "graph/infer_internal.h"

#include <math.h>
#include <string.h>

static bool foldable_type(int t) { return t == GR_INT32 || t == GR_INT64 || t == GR_FLOAT || t == GR_DOUBLE; }

static bool is_int(int t) { return t == GR_INT32 || t == GR_INT64; }

static double get(const gr_tensor *t, int64_t i)
{
    switch (t->elem_type) {
    case GR_INT32: return ((const int32_t *)t->data)[i];
    case GR_INT64: return (double)((const int64_t *)t->data)[i];
    case GR_FLOAT: return ((const float *)t->data)[i];
    default: return ((const double *)t->data)[i];
    }
}

static int64_t geti(const gr_tensor *t, int64_t i)
{
    return t->elem_type == GR_INT32 ? ((const int32_t *)t->data)[i] : ((const int64_t *)t->data)[i];
}

/* Stores v (integers: iv, already wrapped to 64 bits) as t's type. */
static void put(gr_tensor *t, int64_t i, double v, int64_t iv)
{
    switch (t->elem_type) {
    case GR_INT32: ((int32_t *)t->data)[i] = (int32_t)(uint32_t)(uint64_t)iv; break;
    case GR_INT64: ((int64_t *)t->data)[i] = iv; break;
    case GR_FLOAT: ((float *)t->data)[i] = (float)v; break;
    default: ((double *)t->data)[i] = v;
    }
}

/* The flat index of in (rank n, shape s) that numpy broadcasting reads
 * for flat output index o of out (rank on, shape os). */
static int64_t bcast(int on, const int64_t *os, int64_t o, int n, const int64_t *s)
{
    int64_t at = 0, stride = 1;
    for (int d = on - 1, e = n - 1; d >= 0; d--, e--) {
        int64_t i = o % os[d];
        o /= os[d];
        if (e >= 0) {
            if (s[e] != 1) at += i * stride;
            stride *= s[e];
        }
    }
    return at;
}

static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

bool gr_infer_fold_arith(gr_ictx *c)
{
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div", "Neg", "Abs", "Cast", NULL};
    const gr_node *n = c->n;
    const char *dom = n->domain ? n->domain : "";
    if ((*dom && strcmp(dom, "ai.onnx") != 0) || n->n_outputs < 1 || n->outputs[0] < 0) return true;
    int op = -1;
    for (int i = 0; ops[i]; i++)
        if (strcmp(n->op_type, ops[i]) == 0) op = i;
    gr_value *out = &c->g->values[n->outputs[0]];
    if (op < 0 || out->data || !foldable_type(out->type.elem_type)) return true;
    int nin = op <= 3 ? 2 : 1;
    const gr_tensor *in[2];
    if (n->n_inputs < nin) return true;
    for (int k = 0; k < nin; k++) {
        in[k] = gr_iin_const(c, k);
        if (!in[k] || !foldable_type(in[k]->elem_type) || in[k]->numel > GR_FOLD_MAX) return true;
    }
    if (op == 6 && out->type.elem_type != GR_INT32 && out->type.elem_type != GR_INT64 && is_int(out->type.elem_type))
        return true;
    int64_t numel = 1;
    for (int d = 0; d < out->type.ndim; d++) numel *= out->type.shape[d];
    if (numel > GR_FOLD_MAX) return true;
    int et = out->type.elem_type;
    /* A legacy-broadcast binary op (before opset 7) is left to run. */
    if (nin == 2 && c->opset < 7) return true;
    for (int64_t o = 0; o < numel; o++) {
        int64_t ia = nin == 2 ? bcast(out->type.ndim, out->type.shape, o, in[0]->ndim, in[0]->shape) : o;
        if (nin == 2 || op == 6) {
            if (nin == 2) {
                int64_t ib = bcast(out->type.ndim, out->type.shape, o, in[1]->ndim, in[1]->shape);
                if (op == 3 && is_int(et) && geti(in[1], ib) == 0) return true;
            } else if (is_int(et) && !is_int(in[0]->elem_type)) {
                double v = get(in[0], ia);
                double lo = et == GR_INT32 ? -2147483648.0 : -9223372036854775808.0;
                if (!(v >= lo && v < -lo)) return true;
            }
        }
    }
    gr_tensor *t = gr_inew_tensor(c, et, out->type.ndim, out->type.shape);
    if (!t) return false;
    for (int64_t o = 0; o < numel; o++) {
        int64_t ia = nin == 2 ? bcast(out->type.ndim, out->type.shape, o, in[0]->ndim, in[0]->shape) : o;
        int64_t ib = nin == 2 ? bcast(out->type.ndim, out->type.shape, o, in[1]->ndim, in[1]->shape) : 0;
        if (is_int(et) && (op != 6 || is_int(in[0]->elem_type))) {
            int64_t a = geti(in[0], ia), b = nin == 2 ? geti(in[1], ib) : 0, r;
            switch (op) {
            case 0: r = wrap_add(a, b); break;
            case 1: r = wrap_sub(a, b); break;
            case 2: r = wrap_mul(a, b); break;
            case 3: r = (a == INT64_MIN && b == -1) ? a : a / b; break;
            case 4: r = wrap_sub(0, a); break;
            case 5: r = a < 0 ? wrap_sub(0, a) : a; break;
            default: r = a;
            }
            put(t, o, (double)r, r);
        } else if (is_int(et)) { /* Cast from a float: truncation, range checked above */
            double v = trunc(get(in[0], ia));
            put(t, o, v, (int64_t)v);
        } else {
            double a = get(in[0], ia), b = nin == 2 ? get(in[1], ib) : 0, r;
            switch (op) {
            case 0: r = a + b; break;
            case 1: r = a - b; break;
            case 2: r = a * b; break;
            case 3: r = a / b; break;
            case 4: r = -a; break;
            case 5: r = fabs(a); break;
            default: r = a;
            }
            /* float arithmetic rounds each result to float, as it runs */
            if (et == GR_FLOAT) r = (float)r;
            put(t, o, r, 0);
        }
    }
    gr_iout_data(c, 0, t);
    return true;
}
