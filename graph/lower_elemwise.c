/* graph/lower_elemwise.c — elementwise operators: unary functions, binary
 * arithmetic with numpy broadcasting, Mod, BitShift, the variadic Max, Min, Mean and
 * Sum, Clip, Where, Cast, Dropout. (More unary functions: lower_math.c;
 * comparisons: lower_compare.c.)
 *
 * FLOPs: one per arithmetic operation per output element (exp, erf, tanh,
 * sqrt, pow and divisions count 1 each; a variadic operator of n inputs
 * n - 1, Mean n); Cast and Where count 0: they move values and compute
 * nothing. */
#include "graph/infer_internal.h"
#include "graph/lower.h"

#include <float.h>
#include <string.h>

/* Input k read at the output's axes (numpy broadcasting). */
static te_expr *bread(gr_lctx *c, te_tensor *t, int k, const gr_loutput *o)
{
    return gr_read_bcast(t, gr_lin_rank(c, k), o->nd, o->ax);
}

static const char *attr_str(const gr_node *n, const char *name, const char *dflt)
{
    const gr_attr *a = gr_node_attr(n, name);
    return a && a->kind == GR_ATTR_STRING && a->s.data ? a->s.data : dflt;
}

static int64_t attr_int(const gr_node *n, const char *name, int64_t dflt)
{
    const gr_attr *a = gr_node_attr(n, name);
    return a && a->kind == GR_ATTR_INT ? a->i : dflt;
}

static float attr_float(const gr_node *n, const char *name, float dflt)
{
    const gr_attr *a = gr_node_attr(n, name);
    return a && a->kind == GR_ATTR_FLOAT ? a->f : dflt;
}

/* The math functions are defined on floats only: an integer input is
 * refused by name instead of with te's message about the intrinsic. */
static bool need_float(gr_lctx *c, const gr_loutput *o)
{
    if (te_dtype_is_float(o->dt)) return true;
    return gr_lfail(c, "input X is %s; %s is computed for float and double only",
                    te_dtype_str(o->dt), c->n->op_type);
}

/* ---------------- unary ---------------- */

static te_expr *fconst(gr_lctx *c, const gr_loutput *o, double v) { return te_const(c->ctx, o->dt, v); }

/* 0.5 x (1 + erf(x / sqrt 2)), or with approximate='tanh'
 * 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))). */
static te_expr *gelu(gr_lctx *c, const gr_loutput *o, te_expr *x, int *flops)
{
    const char *approx = attr_str(c->n, "approximate", "none");
    te_expr *half_x = te_mul(x, fconst(c, o, 0.5));
    if (strcmp(approx, "tanh") == 0) {
        te_expr *x3 = te_mul(te_mul(x, x), x);
        te_expr *inner = te_mul(te_add(x, te_mul(x3, fconst(c, o, 0.044715))),
                                fconst(c, o, 0.7978845608028654));
        *flops = 9;
        return te_mul(half_x, te_add(te_tanh(inner), fconst(c, o, 1.0)));
    }
    *flops = 5;
    te_expr *e = te_erf(te_mul(x, fconst(c, o, 0.7071067811865476)));
    return te_mul(half_x, te_add(e, fconst(c, o, 1.0)));
}

/* Relu, Sigmoid, Tanh, Erf, Gelu, HardSwish, Sqrt, Reciprocal. */
static bool lower_unary(gr_lctx *c)
{
    gr_loutput o;
    te_expr *x = gr_lunary_read(c, "X", NULL, &o), *y;
    if (!x) return false;
    const char *op = c->n->op_type;
    int flops = 1;
    if (strcmp(op, "Relu") == 0) {
        y = te_max(x, te_const(c->ctx, o.dt, 0));
        /* numpy's maximum keeps a NaN; te's max (x > 0 ? x : 0) would not */
        if (te_dtype_is_float(o.dt)) y = te_select(te_ne(x, x), x, y);
    } else {
        if (!need_float(c, &o)) return false;
        if (strcmp(op, "Sigmoid") == 0) {
            y = te_sigmoid(x);
        } else if (strcmp(op, "Tanh") == 0) {
            y = te_tanh(x);
        } else if (strcmp(op, "Erf") == 0) {
            y = te_erf(x);
        } else if (strcmp(op, "Sqrt") == 0) {
            y = te_sqrt(x);
        } else if (strcmp(op, "Reciprocal") == 0) {
            y = te_div(fconst(c, &o, 1.0), x);
        } else if (strcmp(op, "Gelu") == 0) {
            y = gelu(c, &o, x, &flops);
        } else {
            /* HardSwish: x * max(0, min(1, x / 6 + 1 / 2)). */
            te_expr *hs = te_add(te_mul(x, fconst(c, &o, 1.0 / 6.0)), fconst(c, &o, 0.5));
            hs = te_max(te_min(hs, fconst(c, &o, 1.0)), fconst(c, &o, 0.0));
            y = te_mul(x, hs);
            flops = 5;
        }
    }
    c->flops += flops * gr_loutput_numel(&o);
    return gr_lout(c, 0, o.nd, o.ax, y);
}

/* ---------------- binary ---------------- */

/* Integer division truncates toward zero, as ONNX's reference (numpy's
 * true division cast back to the integer type) and ORT do. A zero
 * divisor, which ONNX leaves undefined, gives 0, and INT_MIN / -1 wraps,
 * instead of the processor's division trap: the divisor the division
 * sees is never 0 or -1 (both sides of a select are evaluated). */
static te_expr *int_div(gr_lctx *c, const gr_loutput *o, te_expr *a, te_expr *b)
{
    te_expr *zero = te_const(c->ctx, o->dt, 0), *one = te_const(c->ctx, o->dt, 1);
    te_expr *bz = te_eq(b, zero);
    if (o->dt.code == TE_UINT) return te_select(bz, zero, te_div(a, te_select(bz, one, b)));
    te_expr *bm1 = te_eq(b, te_const(c->ctx, o->dt, -1));
    te_expr *q = te_div(a, te_select(te_or(bz, bm1), one, b));
    return te_select(bz, zero, te_select(bm1, te_sub(zero, a), q));
}

/* Pow: the output has the base's type. Float bases raise to the exponent
 * converted to the base's type; integer bases are computed in double and
 * truncated back, as ONNX's reference does (np.power(...).astype),
 * exact while the result stays within 2^53. */
static te_expr *lower_pow_expr(gr_lctx *c, const gr_loutput *o, te_expr *a, te_expr *b)
{
    if (te_dtype_is_float(o->dt)) return te_pow(a, te_cast(o->dt, b));
    te_expr *p = te_pow(te_cast(TE_FLOAT64, a), te_cast(TE_FLOAT64, b));
    return te_cast(o->dt, p);
}

/* Pow by a known scalar exponent (gr_lower_input_by_value): 1, 2 and 3
 * multiplied out, as ONNX Runtime's Pow does for 2 and 3 (GELU's tanh
 * form cubes its input; a libm pow per element cost a GPT-2 MLP 60 %),
 * any other value a constant operand. */
static te_expr *pow_by_value(gr_lctx *c, const gr_loutput *o, te_expr *a)
{
    const gr_tensor *e = c->cin[1];
    double v = e->elem_type == GR_FLOAT ? *(const float *)e->data : *(const double *)e->data;
    if (te_dtype_is_float(o->dt)) {
        if (v == 1.0) return a;
        if (v == 2.0) return te_mul(a, a);
        if (v == 3.0) return te_mul(te_mul(a, a), a);
    }
    return lower_pow_expr(c, o, a, te_float_t(c->ctx, TE_FLOAT64, v));
}

/* B under legacy broadcasting (before opset 7, checked by inference):
 * the output is A's shape and B's dimensions are the output's from
 * `axis` on; extent-1 ones read index 0. */
static te_expr *legacy_read(gr_lctx *c, te_tensor *B, const gr_loutput *o)
{
    int rb = gr_lin_rank(c, 1);
    if (rb == 0) return gr_read_bcast(B, 0, o->nd, o->ax);
    int64_t axis = gr_legacy_bcast_axis(c->n, gr_lin_rank(c, 0), rb);
    te_expr *idx[TE_MAX_DIMS];
    for (int d = 0; d < rb; d++) idx[d] = B->shape[d] == 1 ? te_int(c->ctx, 0) : o->ax[axis + d];
    return te_read_n(B, rb, idx);
}

/* Add, Sub, Mul, Div, Pow with numpy broadcasting (legacy broadcasting
 * before opset 7). */
static bool lower_binary(gr_lctx *c)
{
    te_tensor *A, *B;
    gr_loutput o;
    if (!gr_lin(c, 0, "A", &A) || !gr_lout_get(c, 0, &o)) return false;
    const char *op = c->n->op_type;
    te_expr *a = bread(c, A, 0, &o), *y;
    if (gr_lower_input_by_value(c->g, c->n, 1)) {
        c->flops += gr_loutput_numel(&o);
        return gr_lout(c, 0, o.nd, o.ax, pow_by_value(c, &o, a));
    }
    if (!gr_lin(c, 1, "B", &B)) return false;
    te_expr *b = c->opset < 7 ? legacy_read(c, B, &o) : bread(c, B, 1, &o);
    if (te_dtype_is_bool(o.dt))
        return gr_lfail(c, "inputs are bool; %s is computed for numbers only", op);
    if (strcmp(op, "Add") == 0)
        y = te_add(a, b);
    else if (strcmp(op, "Sub") == 0)
        y = te_sub(a, b);
    else if (strcmp(op, "Mul") == 0)
        y = te_mul(a, b);
    else if (strcmp(op, "Div") == 0)
        y = te_dtype_is_float(o.dt) ? te_div(a, b) : int_div(c, &o, a, b);
    else
        y = lower_pow_expr(c, &o, a, b);
    c->flops += gr_loutput_numel(&o);
    return gr_lout(c, 0, o.nd, o.ax, y);
}

/* ---------------- Mod ---------------- */

/* Mod: fmod=1 keeps the dividend's sign (C's fmod and %), fmod=0 (integers
 * only, checked by inference) the divisor's (Python's %). A zero divisor,
 * which ONNX leaves undefined, gives 0, and so does INT_MIN mod -1 (the
 * remainder of every division by -1), instead of the processor's trap:
 * the division never sees 0 or -1. */
static te_expr *mod_expr(gr_lctx *c, const gr_loutput *o, te_expr *a, te_expr *b)
{
    if (te_dtype_is_float(o->dt)) {
        te_expr *args[2] = {a, b};
        return te_call(TE_INTRIN_FMOD, 2, args);
    }
    te_expr *zero = te_const(c->ctx, o->dt, 0), *one = te_const(c->ctx, o->dt, 1);
    te_expr *trivial = te_eq(b, zero);
    if (o->dt.code != TE_UINT) trivial = te_or(trivial, te_eq(b, te_const(c->ctx, o->dt, -1)));
    te_expr *bs = te_select(trivial, one, b);
    te_expr *r = attr_int(c->n, "fmod", 0) ? te_sub(a, te_mul(te_div(a, bs), bs))
                                           : te_floormod(a, bs);
    return te_select(trivial, zero, r);
}

static bool lower_mod(gr_lctx *c)
{
    te_tensor *A, *B;
    gr_loutput o;
    if (!gr_lin(c, 0, "A", &A) || !gr_lin(c, 1, "B", &B) || !gr_lout_get(c, 0, &o)) return false;
    c->flops += gr_loutput_numel(&o);
    return gr_lout(c, 0, o.nd, o.ax, mod_expr(c, &o, bread(c, A, 0, &o), bread(c, B, 1, &o)));
}

/* ---------------- BitShift ---------------- */

/* x << y as x * 2^y and x >> y as x / 2^y in the unsigned type (te has
 * no shift): 2^y is exact in double for every y below the width, and a
 * shift by the width or more gives 0 (numpy's result; C leaves it
 * undefined), the power then never converted out of range. */
static bool lower_bitshift(gr_lctx *c)
{
    te_tensor *A, *B;
    gr_loutput o;
    if (!gr_lin(c, 0, "X", &A) || !gr_lin(c, 1, "Y", &B) || !gr_lout_get(c, 0, &o)) return false;
    te_ctx *ctx = c->ctx;
    te_expr *x = bread(c, A, 0, &o), *y = bread(c, B, 1, &o);
    te_expr *wide = te_ge(y, te_const(ctx, o.dt, o.dt.bits));
    te_expr *ys = te_select(wide, te_const(ctx, o.dt, 0), y);
    te_expr *p = te_cast(o.dt, te_pow(te_float_t(ctx, TE_FLOAT64, 2), te_cast(TE_FLOAT64, ys)));
    bool left = strcmp(attr_str(c->n, "direction", "LEFT"), "LEFT") == 0;
    te_expr *r = left ? te_mul(x, p) : te_div(x, p);
    c->flops += gr_loutput_numel(&o);
    return gr_lout(c, 0, o.nd, o.ax, te_select(wide, te_const(ctx, o.dt, 0), r));
}

/* ---------------- Max, Min, Mean, Sum ---------------- */

/* max (or min) of a and b where a NaN operand gives NaN, as numpy's
 * maximum in ONNX's reference and ONNX Runtime do; te_max alone is
 * `a > b ? a : b`, which drops a NaN a. Integers: te_max/te_min. */
static te_expr *nan_max_min(bool max, te_expr *a, te_expr *b)
{
    if (!te_dtype_is_float(a->dtype)) return max ? te_max(a, b) : te_min(a, b);
    te_expr *pick = te_select(max ? te_gt(a, b) : te_lt(a, b), a, b); /* b when b is NaN */
    return te_select(te_ne(a, a), a, pick);
}

/* Every input broadcast to the output, combined left to right. */
static bool lower_variadic(gr_lctx *c)
{
    gr_loutput o;
    if (!gr_lout_get(c, 0, &o)) return false;
    const char *op = c->n->op_type;
    te_expr *y = NULL;
    for (int k = 0; k < c->n_inputs; k++) {
        te_tensor *X;
        if (!gr_lin(c, k, "data", &X)) return false;
        te_expr *x = bread(c, X, k, &o);
        if (!y)
            y = x;
        else if (strcmp(op, "Max") == 0 || strcmp(op, "Min") == 0)
            y = nan_max_min(op[1] == 'a', y, x);
        else
            y = te_add(y, x);
    }
    bool mean = strcmp(op, "Mean") == 0;
    if (mean) y = te_div(y, te_const(c->ctx, o.dt, c->n_inputs));
    c->flops += (double)(c->n_inputs - 1 + mean) * gr_loutput_numel(&o);
    return gr_lout(c, 0, o.nd, o.ax, y);
}

/* ---------------- Clip ---------------- */

/* A bound of Clip: input k (a scalar tensor) from opset 11, the attribute
 * before; NULL when there is none. */
static bool clip_bound(gr_lctx *c, const gr_loutput *o, int k, const char *name, float dflt,
                       te_expr **out)
{
    *out = NULL;
    if (c->opset < 11) {
        const gr_attr *a = gr_node_attr(c->n, name);
        if (a) *out = te_const(c->ctx, o->dt, attr_float(c->n, name, dflt));
        return true;
    }
    if (k >= c->n_inputs || !c->tin[k]) return true;
    te_tensor *t;
    if (!gr_lin(c, k, name, &t)) return false;
    const gr_type *ty = c->tin[k];
    int64_t n = 1;
    for (int d = 0; d < ty->ndim; d++) n *= ty->shape[d];
    if (n != 1)
        return gr_lfail(c, "input %d (%s) has %lld elements; it must be a scalar", k, name,
                        (long long)n);
    te_expr *zero[TE_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) zero[d] = te_int(c->ctx, 0);
    *out = te_read_n(t, t->ndim, zero);
    return *out != NULL || gr_lfail(c, "%s", te_ctx_errmsg(c->ctx));
}

/* Clip: min(max(x, lo), hi), numpy's order (hi wins when lo > hi). */
static bool lower_clip(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    te_expr *lo, *hi;
    if (!gr_lin(c, 0, "input", &X) || !gr_lout_get(c, 0, &o) ||
        !clip_bound(c, &o, 1, "min", -FLT_MAX, &lo) || !clip_bound(c, &o, 2, "max", FLT_MAX, &hi))
        return false;
    if (te_dtype_is_bool(o.dt)) return gr_lfail(c, "input is bool; Clip needs numbers");
    te_expr *y = bread(c, X, 0, &o);
    if (lo) y = te_max(y, lo);
    if (hi) y = te_min(y, hi);
    /* numpy's clip keeps a NaN; te's max and min would replace it */
    if (te_dtype_is_float(o.dt) && (lo || hi)) {
        te_expr *x = bread(c, X, 0, &o);
        y = te_select(te_ne(x, x), x, y);
    }
    c->flops += (double)((lo != NULL) + (hi != NULL)) * gr_loutput_numel(&o);
    return gr_lout(c, 0, o.nd, o.ax, y);
}

/* ---------------- Cast, Where ---------------- */

/* Cast (and CastLike, to its second input's type): te's conversions are C's: float to integer truncates toward zero
 * (out of range is undefined, in ONNX too), to bool is `!= 0`, bool to
 * a number is 0 or 1. */
static bool lower_cast(gr_lctx *c)
{
    gr_loutput o;
    te_expr *x = gr_lunary_read(c, "input", NULL, &o);
    return x && gr_lout(c, 0, o.nd, o.ax, te_cast(o.dt, x));
}

/* Where: condition ? X : Y, the three broadcast together. */
static bool lower_where(gr_lctx *c)
{
    te_tensor *C, *X, *Y;
    gr_loutput o;
    if (!gr_lin(c, 0, "condition", &C) || !gr_lin(c, 1, "X", &X) || !gr_lin(c, 2, "Y", &Y) ||
        !gr_lout_get(c, 0, &o))
        return false;
    te_expr *y = te_select(bread(c, C, 0, &o), bread(c, X, 1, &o), bread(c, Y, 2, &o));
    return gr_lout(c, 0, o.nd, o.ax, y);
}

/* Dropout as inference runs it (inference refused training): the output
 * is a copy of the input, the mask ones. ratio and training_mode were
 * read by inference. */
static bool lower_dropout(gr_lctx *c)
{
    gr_loutput o;
    te_expr *x = gr_lunary_read(c, "data", NULL, &o);
    if (!x || !gr_lout(c, 0, o.nd, o.ax, x)) return false;
    if (c->n_outputs < 2 || !c->tout[1]) return true;
    gr_loutput m;
    if (!gr_lout_get(c, 1, &m)) return false;
    return gr_lout(c, 1, m.nd, m.ax, te_const(c->ctx, m.dt, 1));
}

const gr_lower_rule gr_lower_rules_elemwise[] = {
    {"", "Relu", lower_unary, 0, 0},
    {"", "Sigmoid", lower_unary, 0, 0},
    {"", "Tanh", lower_unary, 0, 0},
    {"", "Erf", lower_unary, 0, 0},
    {"", "Gelu", lower_unary, 0, 0},
    {"com.microsoft", "Gelu", lower_unary, 0, 0},
    {"", "HardSwish", lower_unary, 0, 0},
    {"", "Sqrt", lower_unary, 0, 0},
    {"", "Reciprocal", lower_unary, 0, 0},
    {"", "Add", lower_binary, 0, 0},
    {"", "Sub", lower_binary, 0, 0},
    {"", "Mul", lower_binary, 0, 0},
    {"", "Div", lower_binary, 0, 0},
    {"", "Pow", lower_binary, 0, 0},
    {"", "Clip", lower_clip, 0, 0},
    {"", "Cast", lower_cast, 0, 0},
    {"", "CastLike", lower_cast, 0, 0},
    {"", "Where", lower_where, 0, 0},
    {"", "Mod", lower_mod, 0, 0},
    {"", "BitShift", lower_bitshift, 0, 0},
    {"", "Max", lower_variadic, 0, 0},
    {"", "Min", lower_variadic, 0, 0},
    {"", "Mean", lower_variadic, 0, 0},
    {"", "Sum", lower_variadic, 0, 0},
    {"", "Dropout", lower_dropout, (1u << 1) | (1u << 2), 12},
    {0},
};
