/* graph/lower_math.c — unary math functions (Abs, Neg, Sign, Exp, Log,
 * Ceil, Floor, Round, the trigonometric and hyperbolic functions and their
 * inverses, Softplus, Softsign, Mish, IsNaN, IsInf, Not) and the
 * activations with attributes (LeakyRelu, Elu, Selu, Celu, HardSigmoid,
 * ThresholdedRelu, Shrink, PRelu).
 *
 * Element types were checked by inference (infer_math.c): the float-only
 * functions see float or double here.
 *
 * FLOPs: one per arithmetic operation, comparison or intrinsic per output
 * element (a select counts 0, as a comparison already counted); IsNaN,
 * IsInf, Not and Neg count 1. */
#include "graph/infer_internal.h"
#include "graph/lower.h"

#include <math.h>
#include <string.h>

static double attr_f(const gr_node *n, const char *name, double dflt)
{
    const gr_attr *a = gr_node_attr(n, name);
    return a && a->kind == GR_ATTR_FLOAT ? (double)a->f : dflt;
}

static int64_t attr_i(const gr_node *n, const char *name, int64_t dflt)
{
    const gr_attr *a = gr_node_attr(n, name);
    return a && a->kind == GR_ATTR_INT ? a->i : dflt;
}

static te_expr *call1(te_intrin op, te_expr *x) { return te_call(op, 1, &x); }

/* max(x, 0) + log(1 + exp(-|x|)): log(1 + exp(x)) without overflow for
 * large x (ONNX's reference overflows to inf there; this stays x). */
static te_expr *softplus(te_ctx *ctx, te_dtype dt, te_expr *x)
{
    te_expr *zero = te_const(ctx, dt, 0), *one = te_const(ctx, dt, 1);
    te_expr *e = te_exp(te_sub(zero, te_fabs(x)));
    return te_add(te_max(x, zero), te_log(te_add(one, e)));
}

/* The intrinsic of a plain float function, or -1. */
static int plain_intrinsic(const char *op)
{
    static const struct {
        const char *op;
        te_intrin in;
    } t[] = {
        {"Exp", TE_INTRIN_EXP},     {"Log", TE_INTRIN_LOG},     {"Ceil", TE_INTRIN_CEIL},
        {"Floor", TE_INTRIN_FLOOR}, {"Round", TE_INTRIN_RINT},  {"Sin", TE_INTRIN_SIN},
        {"Cos", TE_INTRIN_COS},     {"Tan", TE_INTRIN_TAN},     {"Asin", TE_INTRIN_ASIN},
        {"Acos", TE_INTRIN_ACOS},   {"Atan", TE_INTRIN_ATAN},   {"Sinh", TE_INTRIN_SINH},
        {"Cosh", TE_INTRIN_COSH},   {"Asinh", TE_INTRIN_ASINH}, {"Acosh", TE_INTRIN_ACOSH},
        {"Atanh", TE_INTRIN_ATANH},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        if (strcmp(t[i].op, op) == 0) return (int)t[i].in;
    return -1;
}

/* The value of unary operator `op` at x (of type dt); *flops per element. */
static te_expr *unary_expr(gr_lctx *c, const char *op, te_dtype dt, te_expr *x, int *flops)
{
    te_ctx *ctx = c->ctx;
#define K(v) te_const(ctx, dt, (v))
    *flops = 1;
    int in = plain_intrinsic(op);
    if (in >= 0) return call1((te_intrin)in, x);
    bool fl = te_dtype_is_float(dt);
    if (strcmp(op, "Abs") == 0) {
        if (fl) return te_fabs(x);
        return dt.code == TE_UINT ? x : te_select(te_lt(x, K(0)), te_sub(K(0), x), x);
    }
    if (strcmp(op, "Neg") == 0) return fl ? te_mul(x, K(-1)) : te_sub(K(0), x);
    if (strcmp(op, "Sign") == 0) {
        *flops = 2;
        te_expr *s = te_select(te_gt(x, K(0)), K(1), te_select(te_lt(x, K(0)), K(-1), K(0)));
        /* numpy's sign of NaN is NaN */
        return fl ? te_select(te_ne(x, x), x, s) : s;
    }
    if (strcmp(op, "Softplus") == 0) {
        *flops = 6;
        return softplus(ctx, dt, x);
    }
    if (strcmp(op, "Softsign") == 0) {
        *flops = 3;
        return te_div(x, te_add(K(1), te_fabs(x)));
    }
    if (strcmp(op, "Mish") == 0) {
        *flops = 8;
        return te_mul(x, te_tanh(softplus(ctx, dt, x)));
    }
    if (strcmp(op, "IsNaN") == 0) return te_ne(x, x);
    if (strcmp(op, "IsInf") == 0) {
        bool pos = attr_i(c->n, "detect_positive", 1) != 0;
        bool neg = attr_i(c->n, "detect_negative", 1) != 0;
        te_expr *p = te_eq(x, K(INFINITY)), *m = te_eq(x, K(-INFINITY));
        if (pos && neg) return te_or(p, m);
        if (pos) return p;
        if (neg) return m;
        return te_and(p, m); /* neither: all false, X still read */
    }
    if (strcmp(op, "Not") == 0) return te_not(x);
    if (strcmp(op, "LeakyRelu") == 0) {
        *flops = 2;
        return te_select(te_lt(x, K(0)), te_mul(x, K(attr_f(c->n, "alpha", 0.01))), x);
    }
    if (strcmp(op, "ThresholdedRelu") == 0)
        return te_select(te_gt(x, K(attr_f(c->n, "alpha", 1.0))), x, K(0));
    if (strcmp(op, "HardSigmoid") == 0) {
        *flops = 4;
        te_expr *v = te_add(te_mul(x, K(attr_f(c->n, "alpha", 0.2))), K(attr_f(c->n, "beta", 0.5)));
        return te_max(te_min(v, K(1)), K(0));
    }
    if (strcmp(op, "Elu") == 0) {
        *flops = 4;
        te_expr *neg = te_mul(te_sub(te_exp(x), K(1)), K(attr_f(c->n, "alpha", 1.0)));
        return te_select(te_lt(x, K(0)), neg, x);
    }
    if (strcmp(op, "Selu") == 0) {
        *flops = 5;
        double alpha = attr_f(c->n, "alpha", 1.67326319217681884765625);
        double gamma = attr_f(c->n, "gamma", 1.05070102214813232421875);
        te_expr *neg = te_sub(te_mul(te_exp(x), K(alpha)), K(alpha));
        return te_mul(te_select(te_gt(x, K(0)), x, neg), K(gamma));
    }
    if (strcmp(op, "Celu") == 0) {
        *flops = 6;
        double alpha = attr_f(c->n, "alpha", 1.0);
        te_expr *e = te_mul(te_sub(te_exp(te_div(x, K(alpha))), K(1)), K(alpha));
        return te_add(te_max(x, K(0)), te_min(e, K(0)));
    }
    if (strcmp(op, "Shrink") == 0) {
        *flops = 3;
        double bias = attr_f(c->n, "bias", 0.0), lambd = attr_f(c->n, "lambd", 0.5);
        /* Integers compare and add in double, the attributes being floats
         * (x > 0.5 is x >= 1, not x > 0), then convert back exactly. */
        te_dtype ct = fl ? dt : TE_FLOAT64;
        te_expr *xv = te_cast(ct, x);
        te_expr *r = te_select(te_lt(xv, te_const(ctx, ct, -lambd)), te_add(xv, te_const(ctx, ct, bias)),
                               te_select(te_gt(xv, te_const(ctx, ct, lambd)),
                                         te_sub(xv, te_const(ctx, ct, bias)), te_const(ctx, ct, 0)));
        return te_cast(dt, r);
    }
#undef K
    return NULL; /* not reached: the table lists only the operators above */
}

static bool lower_math_unary(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    te_expr *x = gr_lunary_read(c, "X", &X, &o);
    if (!x) return false;
    int flops;
    te_expr *y = unary_expr(c, c->n->op_type, X->dtype, x, &flops);
    c->flops += flops * gr_loutput_numel(&o);
    return gr_lout(c, 0, o.nd, o.ax, y);
}

/* PRelu: x < 0 ? slope x : x, slope broadcast to X (or, before opset 7,
 * one value per channel: gr_prelu_per_channel). */
static bool lower_prelu(gr_lctx *c)
{
    te_tensor *X, *S;
    gr_loutput o;
    if (!gr_lin(c, 0, "X", &X) || !gr_lin(c, 1, "slope", &S) ||
        !gr_lout_get(c, 0, &o))
        return false;
    te_expr *x = gr_read_bcast(X, gr_lin_rank(c, 0), o.nd, o.ax);
    const gr_type *tx = c->tin[0], *ts = c->tin[1];
    te_expr *s = gr_prelu_per_channel(c->opset, tx->ndim, tx->shape, ts->ndim, ts->shape)
                     ? te_read(S, o.ax[1])
                     : gr_read_bcast(S, gr_lin_rank(c, 1), o.nd, o.ax);
    c->flops += 2 * gr_loutput_numel(&o);
    return gr_lout(c, 0, o.nd, o.ax, te_select(te_lt(x, te_const(c->ctx, o.dt, 0)), te_mul(x, s), x));
}

const gr_lower_rule gr_lower_rules_math[] = {
    {"", "Abs", lower_math_unary, 0, 0},
    {"", "Neg", lower_math_unary, 0, 0},
    {"", "Sign", lower_math_unary, 0, 0},
    {"", "Exp", lower_math_unary, 0, 0},
    {"", "Log", lower_math_unary, 0, 0},
    {"", "Ceil", lower_math_unary, 0, 0},
    {"", "Floor", lower_math_unary, 0, 0},
    {"", "Round", lower_math_unary, 0, 0},
    {"", "Sin", lower_math_unary, 0, 0},
    {"", "Cos", lower_math_unary, 0, 0},
    {"", "Tan", lower_math_unary, 0, 0},
    {"", "Asin", lower_math_unary, 0, 0},
    {"", "Acos", lower_math_unary, 0, 0},
    {"", "Atan", lower_math_unary, 0, 0},
    {"", "Sinh", lower_math_unary, 0, 0},
    {"", "Cosh", lower_math_unary, 0, 0},
    {"", "Asinh", lower_math_unary, 0, 0},
    {"", "Acosh", lower_math_unary, 0, 0},
    {"", "Atanh", lower_math_unary, 0, 0},
    {"", "Softplus", lower_math_unary, 0, 0},
    {"", "Softsign", lower_math_unary, 0, 0},
    {"", "Mish", lower_math_unary, 0, 0},
    {"", "IsNaN", lower_math_unary, 0, 0},
    {"", "IsInf", lower_math_unary, 0, 0},
    {"", "Not", lower_math_unary, 0, 0},
    {"", "LeakyRelu", lower_math_unary, 0, 0},
    {"", "Elu", lower_math_unary, 0, 0},
    {"", "Selu", lower_math_unary, 0, 0},
    {"", "Celu", lower_math_unary, 0, 0},
    {"", "HardSigmoid", lower_math_unary, 0, 0},
    {"", "ThresholdedRelu", lower_math_unary, 0, 0},
    {"", "Shrink", lower_math_unary, 0, 0},
    {"", "PRelu", lower_prelu, 0, 0},
    {0},
};
