/* graph/infer_math.c — shape inference of the elementwise math operators
 * added after the first set (infer.c): unary functions and activations,
 * comparisons and logic (bool outputs), the variadic Max/Min/Mean/Sum,
 * Mod and PRelu. Each rule checks what the operator's definition
 * restricts (element types, attribute values, input counts) so that a
 * model breaking it is refused here, naming the node and the rule, and
 * never reaches the lowering. */
#include "graph/infer_internal.h"

#include <stdio.h>
#include <string.h>

static bool is_float_type(int t)
{
    return t == GR_FLOAT || t == GR_DOUBLE || t == GR_FLOAT16 || t == GR_BFLOAT16;
}

static bool is_number_type(int t)
{
    return is_float_type(t) || (t >= GR_UINT8 && t <= GR_INT64) || t == GR_UINT32 ||
           t == GR_UINT64;
}

/* Every FLOAT attribute the operator reads must be a float when given:
 * an int there (alpha=1) would otherwise be read as the default. */
static bool float_attrs(gr_ictx *c, const char *const *names)
{
    for (int i = 0; names && names[i]; i++) {
        const gr_attr *a = gr_node_attr(c->n, names[i]);
        if (a && a->kind != GR_ATTR_FLOAT)
            return gr_ifail(c, "attribute '%s' must be a float", names[i]);
    }
    return true;
}

/* An INT attribute that is a flag: absent, 0 or 1. */
static bool flag_attr(gr_ictx *c, const char *name)
{
    const gr_attr *a = gr_node_attr(c->n, name);
    if (a && (a->kind != GR_ATTR_INT || (a->i != 0 && a->i != 1)))
        return gr_ifail(c, "attribute '%s' must be 0 or 1", name);
    return true;
}

static bool one_input(gr_ictx *c, const gr_type **x)
{
    if (c->n->n_inputs != 1)
        return gr_ifail(c, "takes 1 input, not %d", c->n->n_inputs);
    return gr_iin_req(c, 0, "X", x);
}

/* ---------------- unary ---------------- */

typedef struct {
    const char *op;
    enum { U_FLOAT, U_NUMBER, U_BOOL } in;
    bool bool_out;
    const char *attrs[4]; /* its FLOAT attributes */
} unary_op;

static const unary_op unary_ops[] = {
    {"Abs", U_NUMBER, false, {0}},      {"Neg", U_NUMBER, false, {0}},
    {"Sign", U_NUMBER, false, {0}},     {"Exp", U_FLOAT, false, {0}},
    {"Log", U_FLOAT, false, {0}},       {"Ceil", U_FLOAT, false, {0}},
    {"Floor", U_FLOAT, false, {0}},     {"Round", U_FLOAT, false, {0}},
    {"Sin", U_FLOAT, false, {0}},       {"Cos", U_FLOAT, false, {0}},
    {"Tan", U_FLOAT, false, {0}},       {"Asin", U_FLOAT, false, {0}},
    {"Acos", U_FLOAT, false, {0}},      {"Atan", U_FLOAT, false, {0}},
    {"Sinh", U_FLOAT, false, {0}},      {"Cosh", U_FLOAT, false, {0}},
    {"Asinh", U_FLOAT, false, {0}},     {"Acosh", U_FLOAT, false, {0}},
    {"Atanh", U_FLOAT, false, {0}},     {"Softplus", U_FLOAT, false, {0}},
    {"Softsign", U_FLOAT, false, {0}},  {"Mish", U_FLOAT, false, {0}},
    {"IsNaN", U_FLOAT, true, {0}},      {"IsInf", U_FLOAT, true, {0}},
    {"Not", U_BOOL, true, {0}},
    {"LeakyRelu", U_FLOAT, false, {"alpha"}},
    {"Elu", U_FLOAT, false, {"alpha"}},
    {"Selu", U_FLOAT, false, {"alpha", "gamma"}},
    {"Celu", U_FLOAT, false, {"alpha"}},
    {"HardSigmoid", U_FLOAT, false, {"alpha", "beta"}},
    {"ThresholdedRelu", U_FLOAT, false, {"alpha"}},
    {"Shrink", U_NUMBER, false, {"bias", "lambd"}},
};

bool gr_infer_math_unary(gr_ictx *c)
{
    const unary_op *u = NULL;
    for (size_t i = 0; i < sizeof unary_ops / sizeof *unary_ops; i++)
        if (strcmp(unary_ops[i].op, c->n->op_type) == 0) u = &unary_ops[i];
    if (!u) return gr_ifail(c, "no rule for operator %s", c->n->op_type);
    const gr_type *x;
    if (!one_input(c, &x) || !float_attrs(c, u->attrs)) return false;
    int t = x->elem_type;
    const char *tn = gr_elem_type_name(t);
    if (u->in == U_FLOAT && !is_float_type(t))
        return gr_ifail(c, "input X is %s; %s is defined for float types only", tn, u->op);
    if (u->in == U_NUMBER && !is_number_type(t))
        return gr_ifail(c, "input X is %s; %s is defined for numbers only", tn, u->op);
    if (u->in == U_BOOL && t != GR_BOOL)
        return gr_ifail(c, "input X is %s; %s is defined for bool only", tn, u->op);
    if (strcmp(u->op, "IsInf") == 0 &&
        (!flag_attr(c, "detect_positive") || !flag_attr(c, "detect_negative")))
        return false;
    /* Celu divides by alpha: exp(x / alpha). */
    if (strcmp(u->op, "Celu") == 0) {
        const gr_attr *a = gr_node_attr(c->n, "alpha");
        if (a && a->f == 0) return gr_ifail(c, "attribute 'alpha' is 0 (Celu divides by it)");
    }
    if (strcmp(u->op, "Shrink") == 0) {
        const gr_attr *a = gr_node_attr(c->n, "lambd");
        if (a && a->f < 0) return gr_ifail(c, "attribute 'lambd' is %g; it must be >= 0", (double)a->f);
    }
    return gr_iout(c, 0, u->bool_out ? GR_BOOL : t, x->ndim, x->shape);
}

/* ---------------- PRelu ---------------- */

bool gr_prelu_per_channel(int64_t opset, int xrank, const int64_t *xshape, int srank,
                          const int64_t *sshape)
{
    return opset < 7 && xrank >= 2 && srank == 1 && sshape[0] == xshape[1] && sshape[0] != 1;
}

/* slope broadcasts to X (one direction only): the output is X's shape.
 * Before opset 7 (PRelu 1 and 6: "if slope is of size 1, the value is
 * shared across channels") a rank-1 slope holds one value or one per
 * channel (X's dimension 1), as Caffe2 read it; other slopes broadcast
 * as from opset 7 on. */
bool gr_infer_prelu(gr_ictx *c)
{
    const gr_type *x, *s;
    if (c->n->n_inputs != 2) return gr_ifail(c, "takes 2 inputs, not %d", c->n->n_inputs);
    if (!gr_iin_req(c, 0, "X", &x) || !gr_iin_req(c, 1, "slope", &s)) return false;
    if (!is_number_type(x->elem_type))
        return gr_ifail(c, "input X is %s; PRelu is defined for numbers only",
                        gr_elem_type_name(x->elem_type));
    if (x->elem_type != s->elem_type)
        return gr_ifail(c, "inputs X (%s) and slope (%s) must have one element type",
                        gr_elem_type_name(x->elem_type), gr_elem_type_name(s->elem_type));
    if (c->opset < 7 && s->ndim == 1 && s->shape[0] != 1) {
        if (gr_prelu_per_channel(c->opset, x->ndim, x->shape, s->ndim, s->shape))
            return gr_iout(c, 0, x->elem_type, x->ndim, x->shape);
        if (x->ndim >= 2)
            return gr_ifail(c, "input slope has %lld values; at opset %d it must hold 1 or one per "
                               "channel of X (%lld)", (long long)s->shape[0], (int)c->opset,
                            (long long)x->shape[1]);
    }
    int n;
    int64_t out[GR_MAX_DIMS];
    if (!gr_ibroadcast(c, x->ndim, x->shape, s->ndim, s->shape, &n, out)) return false;
    bool same = n == x->ndim;
    for (int d = 0; same && d < n; d++) same = out[d] == x->shape[d];
    if (!same)
        return gr_ifail(c, "input slope (rank %d) must broadcast to X's shape (rank %d), not "
                           "widen it", s->ndim, x->ndim);
    return gr_iout(c, 0, x->elem_type, x->ndim, x->shape);
}

/* ---------------- comparisons, logic, Mod ---------------- */

/* Two inputs of one element type broadcast together; the output has
 * out_type (0: the inputs' type). */
static bool binary_rule(gr_ictx *c, int out_type)
{
    const gr_type *a, *b;
    if (c->n->n_inputs != 2) return gr_ifail(c, "takes 2 inputs, not %d", c->n->n_inputs);
    if (!gr_iin_req(c, 0, "A", &a) || !gr_iin_req(c, 1, "B", &b)) return false;
    if (a->elem_type != b->elem_type)
        return gr_ifail(c, "inputs A (%s) and B (%s) must have one element type",
                        gr_elem_type_name(a->elem_type), gr_elem_type_name(b->elem_type));
    int n;
    int64_t s[GR_MAX_DIMS];
    if (!gr_ibroadcast(c, a->ndim, a->shape, b->ndim, b->shape, &n, s)) return false;
    return gr_iout(c, 0, out_type ? out_type : a->elem_type, n, s);
}

/* Equal, Greater, GreaterOrEqual, Less, LessOrEqual: bool outputs.
 * Only Equal compares bools. */
bool gr_infer_compare(gr_ictx *c)
{
    const gr_type *a = gr_iin(c, 0);
    if (a && a->elem_type == GR_BOOL && strcmp(c->n->op_type, "Equal") != 0)
        return gr_ifail(c, "inputs are bool; %s compares numbers only", c->n->op_type);
    if (a && !is_number_type(a->elem_type) && a->elem_type != GR_BOOL)
        return gr_ifail(c, "inputs are %s; %s compares numbers%s", gr_elem_type_name(a->elem_type),
                        c->n->op_type, strcmp(c->n->op_type, "Equal") == 0 ? " and bools" : " only");
    return binary_rule(c, GR_BOOL);
}

/* And, Or, Xor: bool inputs and output. */
bool gr_infer_logic(gr_ictx *c)
{
    for (int k = 0; k < 2; k++) {
        const gr_type *t = gr_iin(c, k);
        if (t && t->elem_type != GR_BOOL)
            return gr_ifail(c, "input %c is %s; %s is defined for bool only", "AB"[k],
                            gr_elem_type_name(t->elem_type), c->n->op_type);
    }
    return binary_rule(c, GR_BOOL);
}

/* Mod: integers with fmod 0 (the divisor's sign, Python's %) or 1 (the
 * dividend's, C's %); floats with fmod 1 only. */
bool gr_infer_mod(gr_ictx *c)
{
    if (!flag_attr(c, "fmod")) return false;
    const gr_type *a = gr_iin(c, 0);
    if (a && !is_number_type(a->elem_type))
        return gr_ifail(c, "input A is %s; Mod is defined for numbers only",
                        gr_elem_type_name(a->elem_type));
    if (a && is_float_type(a->elem_type) && gr_iattr_int(c, "fmod", 0) != 1)
        return gr_ifail(c, "input A is %s and attribute 'fmod' is 0: floats need fmod=1",
                        gr_elem_type_name(a->elem_type));
    return binary_rule(c, 0);
}

/* BitShift: unsigned integers, attribute direction LEFT or RIGHT. */
bool gr_infer_bitshift(gr_ictx *c)
{
    const gr_attr *d = gr_node_attr(c->n, "direction");
    if (!d || d->kind != GR_ATTR_STRING) return gr_ifail(c, "attribute 'direction' (LEFT or RIGHT) is missing");
    if (strcmp(d->s.data, "LEFT") != 0 && strcmp(d->s.data, "RIGHT") != 0)
        return gr_ifail(c, "attribute 'direction' is '%s', not LEFT or RIGHT", d->s.data);
    const gr_type *x = gr_iin(c, 0);
    int t = x ? x->elem_type : GR_UINT8;
    if (t != GR_UINT8 && t != GR_UINT16 && t != GR_UINT32 && t != GR_UINT64)
        return gr_ifail(c, "input X is %s; BitShift is defined for unsigned integers only",
                        gr_elem_type_name(t));
    return binary_rule(c, 0);
}

/* ---------------- Max, Min, Mean, Sum ---------------- */

/* One or more inputs of one type, all broadcast together (from opset 8;
 * before it they must have one shape). */
bool gr_infer_variadic(gr_ictx *c)
{
    if (c->n->n_inputs < 1) return gr_ifail(c, "takes at least 1 input, not 0");
    const gr_type *first;
    if (!gr_iin_req(c, 0, "data_0", &first)) return false;
    if (!is_number_type(first->elem_type))
        return gr_ifail(c, "input data_0 is %s; %s is defined for numbers only",
                        gr_elem_type_name(first->elem_type), c->n->op_type);
    int n = first->ndim;
    int64_t s[GR_MAX_DIMS];
    if (n) memcpy(s, first->shape, (size_t)n * sizeof *s);
    for (int k = 1; k < c->n->n_inputs; k++) {
        char what[32];
        snprintf(what, sizeof what, "data_%d", k);
        const gr_type *t;
        if (!gr_iin_req(c, k, what, &t)) return false;
        if (t->elem_type != first->elem_type)
            return gr_ifail(c, "inputs data_0 (%s) and %s (%s) must have one element type",
                            gr_elem_type_name(first->elem_type), what,
                            gr_elem_type_name(t->elem_type));
        if (c->opset < 8) {
            bool same = t->ndim == n;
            for (int d = 0; same && d < n; d++) same = t->shape[d] == s[d];
            if (!same)
                return gr_ifail(c, "input %s differs in shape from data_0 (at opset %d %s does "
                                   "not broadcast)", what, (int)c->opset, c->n->op_type);
            continue;
        }
        int64_t prev[GR_MAX_DIMS];
        if (n) memcpy(prev, s, (size_t)n * sizeof *s);
        if (!gr_ibroadcast(c, n, prev, t->ndim, t->shape, &n, s)) return false;
    }
    return gr_iout(c, 0, first->elem_type, n, s);
}
